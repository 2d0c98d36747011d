import { ZEnqueueBatchRequest, ZEnqueueRequest } from "@porter/contracts";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { parsedSync } from "./trpc";

/** What a parseAsync call gives: the value, or the thrown error's class and issues. */
const outcome = async (parse: () => Promise<unknown>) => {
  try {
    return { value: await parse() };
  } catch (error) {
    return { error: (error as Error).constructor.name, issues: (error as z.ZodError).issues };
  }
};

const job = { job_type: "fx.email", payload: { ref: "s3://a", n: [1, { k: "v" }] }, idempotency_key: "k-1" };
const inputs: unknown[] = [
  job,
  { ...job, priority: 7, not_before: "2026-12-01T10:00:00Z", deadline_at: "2026-12-02T10:00:00+02:00" },
  { ...job, priority: 500 },
  { ...job, extra: 1 },
  { ...job, job_type: "" },
  { ...job, payload: { bad: "a\u0000b" } },
  { ...job, payload: { deep: { x: Number.NaN } } },
  { ...job, idempotency_key: "\ud800" },
  { ...job, not_before: "2026-12-02T10:00:00Z", deadline_at: "2026-12-01T10:00:00Z" },
  { ...job, traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", trace_id: "other" },
  { payload: [] },
  "not an object",
  null,
];

describe("parsedSync", () => {
  it("gives what tRPC's parseAsync gives: the same value, or the same ZodError issues", async () => {
    for (const input of inputs) {
      expect(await outcome(() => parsedSync(ZEnqueueRequest).parseAsync(input))).toEqual(await outcome(() => ZEnqueueRequest.parseAsync(input)));
    }
    const batch = { jobs: inputs };
    expect(await outcome(() => parsedSync(ZEnqueueBatchRequest).parseAsync(batch))).toEqual(await outcome(() => ZEnqueueBatchRequest.parseAsync(batch)));
    const good = { jobs: Array.from({ length: 1000 }, (_, i) => ({ ...job, idempotency_key: `k-${i}` })) };
    expect(await outcome(() => parsedSync(ZEnqueueBatchRequest).parseAsync(good))).toEqual(await outcome(() => ZEnqueueBatchRequest.parseAsync(good)));
  });

  it("still parses a schema with an async check, asynchronously", async () => {
    const slow = z.string().refine(async (s) => s.length > 2, "too short");
    expect(await parsedSync(slow).parseAsync("abc")).toBe("abc");
    expect((await outcome(() => parsedSync(slow).parseAsync("a"))).issues).toEqual((await outcome(() => slow.parseAsync("a"))).issues);
  });
});
