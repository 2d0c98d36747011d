import { JOB_ERROR_CODES, PermanentError, RetryableError, ZDiagSleep } from "@porter/contracts";
import { describe, expect, it } from "vitest";
import { CancelledError, classifyFailure, TimeoutError } from "./classify";

// `porter errors` and `redrive --help` print the contracts' JOB_ERROR_CODES: every code and class
// that classification gives Porter's own failures must be in that list, as listed.
describe("JOB_ERROR_CODES lists what classifyFailure records", () => {
  const zodError = ZDiagSleep.safeParse({}).error;
  it.each([
    ["a RetryableError without a code", new RetryableError("flaky")],
    ["a throttle RetryableError", new RetryableError("429", { isThrottle: true })],
    ["a PermanentError without a code", new PermanentError("no")],
    ["a timeout", new TimeoutError(1000)],
    ["a cancellation", new CancelledError("stop")],
    ["a ZodError", zodError],
    ["an error without a code", new Error("boom")],
    ["a PERMISSION_DENIED error", Object.assign(new Error("nope"), { code: "PERMISSION_DENIED" })],
    ["a BUDGET_EXCEEDED error", Object.assign(new Error("broke"), { code: "BUDGET_EXCEEDED" })],
  ])("%s", (_name, error) => {
    const failure = classifyFailure(error);
    expect(Object.keys(JOB_ERROR_CODES)).toContain(failure.code);
    expect(JOB_ERROR_CODES[failure.code as keyof typeof JOB_ERROR_CODES].class).toBe(failure.class);
  });
});
