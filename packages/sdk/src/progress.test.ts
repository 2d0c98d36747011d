import { describe, expect, it } from "vitest";
import { CHECKPOINT_MAX_BYTES, encodeCheckpoint, HandlerContextError, validateProgress } from "./progress";

const refused = (fn: () => unknown, code: string) => {
  let caught: unknown;
  try {
    fn();
  } catch (error) {
    caught = error;
  }
  expect(caught).toBeInstanceOf(HandlerContextError);
  expect(caught).toMatchObject({ name: "PermanentError", code });
};

describe("validateProgress", () => {
  it("takes any subset of fraction, message and step", () => {
    expect(validateProgress({})).toEqual({});
    expect(validateProgress({ fraction: 0 })).toEqual({ fraction: 0 });
    expect(validateProgress({ fraction: 1, message: "done", step: "upload" })).toEqual({ fraction: 1, message: "done", step: "upload" });
    expect(validateProgress({ message: "m".repeat(200), step: "s".repeat(100) })).toMatchObject({ step: "s".repeat(100) });
    expect(validateProgress({ fraction: undefined, message: "x" })).toEqual({ message: "x" });
  });

  it("refuses a fraction outside 0..1 or not a finite number", () => {
    for (const fraction of [-0.01, 1.01, Number.NaN, Number.POSITIVE_INFINITY, "0.5", null]) refused(() => validateProgress({ fraction }), "INVALID_PROGRESS");
  });

  it("refuses a message over 200 characters, a step over 100, and non-strings", () => {
    refused(() => validateProgress({ message: "m".repeat(201) }), "INVALID_PROGRESS");
    refused(() => validateProgress({ step: "s".repeat(101) }), "INVALID_PROGRESS");
    refused(() => validateProgress({ message: 42 }), "INVALID_PROGRESS");
    refused(() => validateProgress({ step: { name: "x" } }), "INVALID_PROGRESS");
  });

  it("refuses unknown fields and anything but an object", () => {
    refused(() => validateProgress({ fraction: 0.5, percent: 50 }), "INVALID_PROGRESS");
    for (const value of [null, undefined, 0.5, "half", [0.5]]) refused(() => validateProgress(value), "INVALID_PROGRESS");
  });
});

describe("encodeCheckpoint", () => {
  it("serializes JSON data up to the limit", () => {
    expect(encodeCheckpoint({ page: 3, cursor: "abc" })).toBe(`{"page":3,"cursor":"abc"}`);
    expect(encodeCheckpoint(null)).toBe("null");
    const exact = "x".repeat(CHECKPOINT_MAX_BYTES - 2); // the quotes make it exactly the limit
    expect(encodeCheckpoint(exact)).toHaveLength(CHECKPOINT_MAX_BYTES);
  });

  it("refuses data over 16 KiB of UTF-8 JSON", () => {
    refused(() => encodeCheckpoint("x".repeat(CHECKPOINT_MAX_BYTES - 1)), "CHECKPOINT_TOO_LARGE");
    // 6 000 three-byte characters: 6 002 characters but 18 002 bytes.
    refused(() => encodeCheckpoint("€".repeat(6_000)), "CHECKPOINT_TOO_LARGE");
  });

  it("refuses what is not JSON", () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    refused(() => encodeCheckpoint(cyclic), "CHECKPOINT_NOT_JSON");
    refused(() => encodeCheckpoint({ n: 1n }), "CHECKPOINT_NOT_JSON");
    refused(() => encodeCheckpoint(undefined), "CHECKPOINT_NOT_JSON");
    refused(() => encodeCheckpoint(() => 1), "CHECKPOINT_NOT_JSON");
  });
});
