import { describe, expect, it } from "vitest";
import { isProducerCall } from "./producer-call";

describe("isProducerCall", () => {
  it("takes producer procedures alone and batches of producer procedures only", () => {
    expect(isProducerCall("/api/trpc/producer.enqueue")).toBe(true);
    expect(isProducerCall("/api/trpc/producer.get?input=%7B%7D")).toBe(true);
    expect(isProducerCall("/api/trpc/producer.enqueue,producer.enqueue?batch=1")).toBe(true);
  });

  it("leaves console procedures, mixed batches and other paths to Next", () => {
    expect(isProducerCall("/api/trpc/me.get")).toBe(false);
    expect(isProducerCall("/api/trpc/producer.enqueue,me.get?batch=1")).toBe(false);
    expect(isProducerCall("/api/trpc/me.get,producer.enqueue?batch=1")).toBe(false);
    expect(isProducerCall("/api/events?job_id=x")).toBe(false);
    expect(isProducerCall("/producer.enqueue")).toBe(false);
    expect(isProducerCall("/")).toBe(false);
  });
});
