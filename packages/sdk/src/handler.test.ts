import { describe, expect, it } from "vitest";
import { z } from "zod";
import { defineHandler, PermanentError } from "./handler";

describe("defineHandler", () => {
  const handler = defineHandler({
    type: "document.parse",
    payload: z.object({ source_ref: z.string().min(1), pages: z.number().int().optional() }),
    run: async (job) => ({ artifact_ref: `parsed:${job.payload.source_ref}` }),
  });

  it("validates and returns the payload with the handler's schema", () => {
    expect(handler.parsePayload({ source_ref: "s3://a", pages: 3 })).toEqual({ source_ref: "s3://a", pages: 3 });
  });

  it("turns an invalid payload into a permanent INVALID_PAYLOAD error naming the fields", () => {
    let caught: unknown;
    try {
      handler.parsePayload({ source_ref: "", pages: "many" });
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(PermanentError);
    expect(caught).toMatchObject({ code: "INVALID_PAYLOAD" });
    expect((caught as Error).message).toMatch(/^invalid payload for document\.parse: source_ref: .+; pages: .+/);
  });

  it("without a schema accepts any JSON object, and nothing else", () => {
    const loose = defineHandler({ type: "x", run: async () => null });
    expect(loose.parsePayload({ a: 1 })).toEqual({ a: 1 });
    expect(() => loose.parsePayload([1])).toThrow(PermanentError);
    expect(() => loose.parsePayload(null)).toThrow(/expected a JSON object/);
  });
});
