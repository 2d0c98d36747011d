import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import {
  acceptEnqueueBatchRequest,
  acceptEnqueueRequest,
  acceptEnqueueResult,
  acceptEnqueueResults,
  MAX_BATCH_SIZE,
  ZEnqueueBatchRequest,
  ZEnqueueRequest,
  ZEnqueueResult,
} from "./job";

// The accept functions are the API server's path for the common enqueue: they must be an exact
// subset of the schemas. Whatever they accept, the schema accepts with an equal output; what they
// do not accept goes to the schema (so refusing a valid request costs time, never a wrong answer).

/** The batch's output schema, as the producer router declares it. */
const ZEnqueueResults = z.object({ results: z.array(ZEnqueueResult) });

const NUL = "a\u0000b";
const LONE_SURROGATE = "x\ud800y";

/** Strings around every rule of the identifiers and the key: valid, empty, too long, unstorable, odd characters. */
const text = fc.oneof(
  fc.constantFrom("a", "email.send", "tenant_A", "x:y-z.1", "A".repeat(200), "A".repeat(201), "", " a", "-a", "a b", "é", NUL, LONE_SURROGATE, "😀"),
  fc.string({ maxLength: 12 }),
  fc.string({ unit: "grapheme", maxLength: 6 }),
  fc.string({ unit: "binary", maxLength: 6 }),
);
const integer = fc.oneof(
  fc.integer({ min: -5, max: 90_000 }),
  fc.constantFrom(0, 1, 100, 101, 1000, 1001, 86_400, 86_401, -0, 0.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 53),
  fc.double(),
);
/** Anything a field could hold, from JSON or from an in-process caller. */
const odd = fc.constantFrom<unknown>(undefined, null, true, [], {}, new Date(0), "1", 1, Object.create(null));

/** A payload: JSON values and objects, with the shapes the schema refuses or treats specially. */
const payload = fc.oneof(
  fc.dictionary(fc.string({ maxLength: 5 }), fc.jsonValue({ maxDepth: 3 }), { maxKeys: 4 }),
  fc.constantFrom<unknown>(
    { k: 1 },
    { source_ref: "s3://docs/1", n: [1, 2, { deep: true }] },
    { bad: NUL },
    { [NUL]: 1 },
    { s: LONE_SURROGATE },
    { n: Number.POSITIVE_INFINITY },
    { d: new Date(0) },
    JSON.parse('{"__proto__": {"x": 1}}'),
    JSON.parse('{"a": {"__proto__": 1}}'),
    Object.create(null),
    Object.assign(Object.create(null), { k: 1 }),
    { [Symbol("s")]: 1 },
    [],
    [1],
    null,
    "text",
  ),
  fc.constant(Array.from({ length: 40 }).reduce<unknown>((inner) => ({ inner }), 1)),
);

const field = <T>(valid: fc.Arbitrary<T>) => fc.option(fc.oneof({ weight: 4, arbitrary: valid }, { weight: 1, arbitrary: odd }), { nil: undefined });

/** A request: each field valid, invalid or absent; sometimes a field the fast path leaves to the schema, or one no schema knows. */
const request = fc
  .record(
    {
      job_type: fc.oneof({ weight: 4, arbitrary: fc.constantFrom("email.send", "fx.parse") }, { weight: 1, arbitrary: text }, { weight: 1, arbitrary: odd }),
      tenant_id: field(text),
      payload: fc.oneof({ weight: 3, arbitrary: fc.constant({ k: 1 }) }, { weight: 2, arbitrary: payload }),
      idempotency_key: fc.oneof(
        { weight: 4, arbitrary: fc.string({ minLength: 1, maxLength: 20 }) },
        { weight: 1, arbitrary: text },
        { weight: 1, arbitrary: odd },
      ),
      priority: field(integer),
      max_attempts: field(integer),
      timeout_s: field(integer),
      contract: field(fc.constantFrom("job.v1", "job.v2")),
      contract_version: field(fc.constantFrom("1.0", "2.0")),
      not_before: field(fc.constantFrom("2026-12-01T10:00:00Z", "yesterday")),
      deadline_at: field(fc.constantFrom("2026-12-01T09:00:00Z", "2027-01-01T00:00:00Z")),
      trace_id: field(fc.constantFrom("4bf92f3577b34da6a3ce929d0e0e4736", "")),
      traceparent: field(fc.constantFrom("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "00-bad")),
      surprise: field(fc.constant(1)),
    },
    { requiredKeys: ["job_type", "payload", "idempotency_key"] },
  )
  .chain((r) => fc.constantFrom<unknown>(r, JSON.parse(JSON.stringify(r))));
// As an in-process caller builds it (an `undefined` field stays a key) or as it arrives over HTTP (JSON.parse's own objects).

/** A request the fast path is there for: what producers send, valid. */
const common = fc
  .record(
    {
      job_type: fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9._:-]{0,30}$/),
      tenant_id: fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9._:-]{0,30}$/),
      payload: fc.dictionary(
        fc.string({ maxLength: 8 }).filter((k) => k !== "__proto__" && !k.includes("\u0000")),
        fc.oneof(fc.integer(), fc.boolean(), fc.stringMatching(/^[ -~]{0,20}$/)),
      ),
      idempotency_key: fc.stringMatching(/^[ -~]{1,200}$/),
      priority: fc.integer({ min: 0, max: 100 }),
      max_attempts: fc.integer({ min: 1, max: 1000 }),
      timeout_s: fc.integer({ min: 1, max: 86_400 }),
      contract: fc.constant("job.v1"),
      contract_version: fc.constant("1.0"),
    },
    { requiredKeys: ["job_type", "payload", "idempotency_key"] },
  )
  .map((r) => JSON.parse(JSON.stringify(r)) as unknown);

/** A request producers send with one field replaced by a value around the rules (most often one field off). */
const oneOff = fc
  .tuple(
    common,
    fc.constantFrom(
      "job_type",
      "tenant_id",
      "payload",
      "idempotency_key",
      "priority",
      "max_attempts",
      "timeout_s",
      "contract",
      "contract_version",
      "trace_id",
      "surprise",
    ),
    fc.oneof(text, integer, odd, payload),
  )
  .map(([value, key, replacement]) => ({ ...(value as Record<string, unknown>), [key]: replacement }));

/** `accepted` is the schema's output for `value`, or undefined. */
const expectSubset = <T>(accepted: T | undefined, parse: () => { success: boolean; data?: unknown }): boolean => {
  if (accepted === undefined) return false;
  const parsed = parse();
  expect(parsed.success).toBe(true);
  expect(accepted).toStrictEqual(parsed.data);
  return true;
};

describe("acceptEnqueueRequest", () => {
  it("accepts only what ZEnqueueRequest accepts, with its output", () => {
    let accepted = 0;
    fc.assert(
      fc.property(fc.oneof(request, common, oneOff), (value) => {
        if (expectSubset(acceptEnqueueRequest(value), () => ZEnqueueRequest.safeParse(value))) accepted++;
      }),
      { numRuns: 5000 },
    );
    // The generator reaches both sides of the line: not a test of refusals only.
    expect(accepted).toBeGreaterThan(1000);
  });

  it("accepts the requests producers send", () => {
    fc.assert(
      fc.property(common, (value) => {
        expect(expectSubset(acceptEnqueueRequest(value), () => ZEnqueueRequest.safeParse(value))).toBe(true);
      }),
      { numRuns: 2000 },
    );
  });

  it("leaves to the schema each request it cannot vouch for", () => {
    const base = { job_type: "email.send", payload: { k: 1 }, idempotency_key: "k-1" };
    expect(acceptEnqueueRequest(base)).toStrictEqual(base);
    for (const other of [
      { ...base, not_before: "2026-12-01T10:00:00Z" },
      { ...base, trace_id: "4bf92f3577b34da6a3ce929d0e0e4736" },
      { ...base, tenant_id: undefined },
      { ...base, priority: 101 },
      { ...base, idempotency_key: "" },
      { ...base, idempotency_key: NUL },
      { ...base, payload: { bad: LONE_SURROGATE } },
      { ...base, payload: JSON.parse('{"__proto__": {"x": 1}}') },
      JSON.parse('{"job_type": "a", "payload": {}, "idempotency_key": "k", "__proto__": {}}'),
      Object.assign(Object.create(null), base),
      Object.defineProperty({ ...base }, "tenant_id", { value: "tenant_A", enumerable: false }),
      // As many keys as fields read, but one of them unknown: a hidden tenant_id beside it.
      Object.defineProperty({ ...base, surprise: 1 }, "tenant_id", { value: "tenant_A", enumerable: false }),
    ]) {
      expect(acceptEnqueueRequest(other), JSON.stringify(other)).toBeUndefined();
    }
  });

  it("returns a new object (the caller's request is never the procedure's)", () => {
    const value = { job_type: "email.send", payload: { k: 1 }, idempotency_key: "k-1" };
    const accepted = acceptEnqueueRequest(value)!;
    accepted.tenant_id = "tenant_A";
    expect(value).not.toHaveProperty("tenant_id");
  });
});

describe("acceptEnqueueBatchRequest", () => {
  it("accepts only what ZEnqueueBatchRequest accepts, with its output", () => {
    let accepted = 0;
    const batch = fc.oneof(
      fc.record({ jobs: fc.array(fc.oneof({ weight: 5, arbitrary: common }, { weight: 1, arbitrary: request }), { maxLength: 6 }) }),
      fc.record({ jobs: fc.array(common, { maxLength: 3 }), extra: fc.constant(1) }),
      fc.constantFrom<unknown>({ jobs: "no" }, { jobs: null }, [], null, { jobs: [] }),
    );
    fc.assert(
      fc.property(batch, (value) => {
        if (expectSubset(acceptEnqueueBatchRequest(value), () => ZEnqueueBatchRequest.safeParse(value))) accepted++;
      }),
      { numRuns: 2000 },
    );
    expect(accepted).toBeGreaterThan(100);
  });

  it("holds the batch's limits: 1 to MAX_BATCH_SIZE jobs", () => {
    const job = (i: number) => ({ job_type: "email.send", payload: { i }, idempotency_key: `k-${i}` });
    expect(acceptEnqueueBatchRequest({ jobs: Array.from({ length: MAX_BATCH_SIZE }, (_, i) => job(i)) })?.jobs).toHaveLength(MAX_BATCH_SIZE);
    expect(acceptEnqueueBatchRequest({ jobs: Array.from({ length: MAX_BATCH_SIZE + 1 }, (_, i) => job(i)) })).toBeUndefined();
    expect(acceptEnqueueBatchRequest({ jobs: [] })).toBeUndefined();
    // Another field beside a hidden `jobs`: the schema refuses the batch.
    const hidden = Object.defineProperty({ other: 1 }, "jobs", { value: [job(1)], enumerable: false });
    expect(ZEnqueueBatchRequest.safeParse(hidden).success).toBe(false);
    expect(acceptEnqueueBatchRequest(hidden)).toBeUndefined();
  });
});

describe("acceptEnqueueResult(s)", () => {
  it("accept only what ZEnqueueResult accepts, with its output (unknown fields dropped, as it drops them)", () => {
    const result = fc.record({
      job_id: fc.oneof(fc.uuid(), fc.constantFrom("not-a-uuid", "00000000-0000-0000-0000-000000000000"), fc.string({ maxLength: 40 })),
      status: fc.oneof(fc.constantFrom("READY", "RUNNING", "SUCCEEDED", "DONE", "ready")),
      deduplicated: fc.oneof(fc.boolean(), fc.constantFrom<unknown>(0, "true", null)),
      extra: fc.option(fc.constant("dropped"), { nil: undefined }),
    });
    let accepted = 0;
    fc.assert(
      fc.property(fc.array(result, { maxLength: 4 }), (results) => {
        for (const r of results) expectSubset(acceptEnqueueResult(r), () => ZEnqueueResult.safeParse(r));
        if (expectSubset(acceptEnqueueResults({ results }), () => ZEnqueueResults.safeParse({ results }))) accepted++;
      }),
      { numRuns: 2000 },
    );
    expect(accepted).toBeGreaterThan(50);
  });
});
