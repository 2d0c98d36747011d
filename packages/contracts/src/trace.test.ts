import { describe, expect, it } from "vitest";
import { ZEnqueueRequest } from "./job";
import { formatTraceparent, parseTraceparent, ZTraceparent } from "./trace";

const VALID = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

describe("traceparent", () => {
  it("parses a W3C version-00 traceparent and formats it back", () => {
    expect(parseTraceparent(VALID)).toEqual({ traceId: "4bf92f3577b34da6a3ce929d0e0e4736", spanId: "00f067aa0ba902b7", flags: 1 });
    expect(formatTraceparent(parseTraceparent(VALID)!)).toBe(VALID);
    expect(formatTraceparent({ traceId: "4bf92f3577b34da6a3ce929d0e0e4736", spanId: "00f067aa0ba902b7", flags: 0 })).toMatch(/-00$/);
  });

  it.each([
    ["an all-zero trace id", "00-00000000000000000000000000000000-00f067aa0ba902b7-01"],
    ["an all-zero span id", "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01"],
    ["another version", "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"],
    ["uppercase hex", "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01"],
    ["a short trace id", "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01"],
    ["trailing data", `${VALID}-extra`],
    ["no flags", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7"],
    ["empty", ""],
  ])("refuses %s", (_what, value) => {
    expect(parseTraceparent(value)).toBeUndefined();
    expect(ZTraceparent.safeParse(value).success).toBe(false);
  });

  it("in an enqueue request: a bad one names the field; a trace_id must be its trace id", () => {
    const base = { job_type: "t", payload: {}, idempotency_key: "k" };
    expect(ZEnqueueRequest.safeParse({ ...base, traceparent: VALID }).success).toBe(true);
    expect(ZEnqueueRequest.safeParse({ ...base, traceparent: VALID, trace_id: "4bf92f3577b34da6a3ce929d0e0e4736" }).success).toBe(true);
    const bad = ZEnqueueRequest.safeParse({ ...base, traceparent: "00-xyz" });
    expect(bad.error?.issues.map((i) => i.path)).toEqual([["traceparent"]]);
    const mismatch = ZEnqueueRequest.safeParse({ ...base, traceparent: VALID, trace_id: "other" });
    expect(mismatch.error?.issues.map((i) => i.path)).toEqual([["trace_id"]]);
  });
});
