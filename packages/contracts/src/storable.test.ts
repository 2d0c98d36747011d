import { describe, expect, it } from "vitest";
import { ZEnqueueRequest } from "./job";
import { MAX_PAYLOAD_DEPTH, payloadIssue, unstorableTextReason, ZDateTime, ZStorableText } from "./storable";

describe("unstorableTextReason", () => {
  it.each([
    ["plain text", "s3://bucket/key", null],
    ["a surrogate pair (emoji)", "😀", null],
    ["BMP characters and U+FFFF", "é ключ \uffff", null],
    ["NUL", "a\u0000b", /NUL/],
    ["a lone high surrogate", "a\ud800", /lone surrogate/],
    ["a lone low surrogate", "\udc00a", /lone surrogate/],
    ["a reversed pair", "\udc00\ud800", /lone surrogate/],
  ])("%s", (_name, value, expected) => {
    const reason = unstorableTextReason(value);
    if (expected === null) expect(reason).toBeNull();
    else expect(reason).toMatch(expected);
  });

  it("is what ZStorableText checks, and chains like z.string()", () => {
    const schema = ZStorableText.trim().min(1).max(5);
    expect(schema.parse(" ok ")).toBe("ok");
    expect(schema.safeParse("\u0000").error?.issues[0]?.message).toMatch(/NUL/);
    expect(schema.safeParse("toolong").success).toBe(false);
  });
});

const nested = (depth: number): unknown => {
  let value: unknown = 1;
  for (let i = 0; i < depth; i++) value = { a: value };
  return value;
};

describe("payloadIssue", () => {
  it(`accepts ${MAX_PAYLOAD_DEPTH} levels and refuses one more, naming where`, () => {
    expect(payloadIssue(nested(MAX_PAYLOAD_DEPTH))).toBeNull();
    const issue = payloadIssue(nested(MAX_PAYLOAD_DEPTH + 1));
    expect(issue?.message).toMatch(/deeper than 32 levels/);
    expect(issue?.path).toHaveLength(MAX_PAYLOAD_DEPTH);
  });

  it("walks 200 000 levels and a million items without the stack", () => {
    expect(payloadIssue(nested(200_000))?.message).toMatch(/deeper than/);
    expect(payloadIssue({ items: new Array(1_000_000).fill(0) })).toBeNull();
  });

  it.each([
    ["NUL in a value", { a: ["x", { b: "\u0000" }] }, ["a", 1, "b"], /NUL/],
    ["NUL in a key", { a: { "k\u0000": 1 } }, ["a", "k\u0000"], /^key .*NUL/],
    ["a lone surrogate in a key", { "\ud800": 1 }, ["\ud800"], /^key .*lone surrogate/],
    ["NaN", { n: Number.NaN }, ["n"], /finite/],
    ["Infinity", { n: [Infinity] }, ["n", 0], /finite/],
    ["a Date", { d: new Date() }, ["d"], /must be JSON/],
    ["a bigint", { b: 1n }, ["b"], /must be JSON/],
    ["undefined in an array", { u: [undefined] }, ["u", 0], /must be JSON/],
    ["a function", { f: () => 1 }, ["f"], /must be JSON/],
  ])("refuses %s at its path", (_name, payload, path, message) => {
    const issue = payloadIssue(payload);
    expect(issue?.path).toEqual(path);
    expect(issue?.message).toMatch(message);
  });

  it("accepts JSON of every kind, a __proto__ key and a null-prototype object", () => {
    expect(payloadIssue(JSON.parse('{"__proto__": {"x": 1}, "a": [null, true, 1.5, "s", {}], "b": -0}'))).toBeNull();
    expect(payloadIssue(Object.assign(Object.create(null), { a: 1 }))).toBeNull();
  });
});

describe("ZDateTime", () => {
  it.each([
    ["1970-01-01T00:00:00Z", true],
    ["9999-12-31T23:59:59Z", true],
    ["9999-12-31T23:59:59.999+00:00", true],
    ["2026-12-01T10:00:00+02:00", true],
    ["1969-12-31T23:59:59Z", false],
    ["0000-01-01T00:00:00Z", false],
    ["9999-12-31T23:59:59-14:00", false],
    ["2026-02-30T00:00:00Z", false],
    ["2026-12-01", false],
  ])("%s → %s", (value, ok) => {
    expect(ZDateTime.safeParse(value).success).toBe(ok);
  });
});

describe("ZEnqueueRequest", () => {
  const base = { job_type: "x", payload: {}, idempotency_key: "k" };
  it("refuses a deadline_at not later than not_before, and accepts a later one", () => {
    const same = ZEnqueueRequest.safeParse({ ...base, not_before: "2099-01-01T01:00:00+01:00", deadline_at: "2099-01-01T00:00:00Z" });
    expect(same.error?.issues).toEqual([expect.objectContaining({ path: ["deadline_at"], message: expect.stringMatching(/later than not_before/) })]);
    expect(ZEnqueueRequest.safeParse({ ...base, not_before: "2099-01-01T00:00:00Z", deadline_at: "2099-01-01T00:00:01Z" }).success).toBe(true);
  });
});
