import { PermanentError, RetryableError } from "@porter/contracts";
import { describe, expect, it } from "vitest";
import { allTransitions, canTransition, isClaimable, isTerminal, TERMINAL_STATES } from "../state";
import { nextRunAt } from "./backoff";
import { clampEnvelope, type EnqueuePolicy } from "./clamp";
import { CancelledError, classifyFailure, TimeoutError } from "./classify";
import { decideFailure } from "./decide";

const now = new Date("2026-01-01T00:00:00Z");
const policy: EnqueuePolicy = {
  queueId: "q",
  poolId: "p",
  defaultPriority: 50,
  maxPriority: 80,
  defaultMaxAttempts: 5,
  maxAttempts: 10,
  defaultTimeoutS: 60,
  maxTimeoutS: 600,
  defaultDeadlineS: null,
  tenantMaxPriority: null,
  tenantMaxAttempts: null,
  admission: "reject",
  tenantRatePerSecond: null,
  tenantBacklogCap: null,
};

describe("nextRunAt (full jitter)", () => {
  it("stays within [0, min(cap, base·2^(attempt−1))]", () => {
    const p = { baseMs: 100, capMs: 1000 };
    expect(nextRunAt(1, p, now, () => 0).getTime() - now.getTime()).toBe(0);
    expect(nextRunAt(1, p, now, () => 0.999).getTime() - now.getTime()).toBe(99);
    expect(nextRunAt(3, p, now, () => 0.5).getTime() - now.getTime()).toBe(200);
    expect(nextRunAt(20, p, now, () => 0.999).getTime() - now.getTime()).toBe(999);
  });
  it("never retries sooner than Retry-After", () => {
    expect(nextRunAt(1, { baseMs: 100, capMs: 1000 }, now, () => 0.1, 5000).getTime() - now.getTime()).toBe(5000);
  });
});

describe("classifyFailure", () => {
  it("treats unknown errors as retryable and keeps their code", () => {
    expect(classifyFailure(new Error("x")).class).toBe("retryable");
    expect(classifyFailure(Object.assign(new Error("x"), { code: "ECONNRESET" })).code).toBe("ECONNRESET");
    expect(classifyFailure("a string").class).toBe("retryable");
  });
  it("recognises permanent, retryable with Retry-After, timeout and cancellation", () => {
    expect(classifyFailure(new PermanentError("bad", { code: "BUDGET_EXCEEDED" }))).toMatchObject({ class: "permanent", code: "BUDGET_EXCEEDED" });
    expect(classifyFailure(new RetryableError("429", { retryAfterMs: 3000 }))).toMatchObject({ class: "retryable", retryAfterMs: 3000 });
    expect(classifyFailure(new TimeoutError(1000)).class).toBe("timeout");
    expect(classifyFailure(new CancelledError("user")).class).toBe("cancelled");
  });
  it("treats invalid payloads, permission and budget errors as permanent", () => {
    const zodLike = Object.assign(new Error("invalid"), { name: "ZodError" });
    expect(classifyFailure(zodLike)).toMatchObject({ class: "permanent", code: "INVALID_PAYLOAD" });
    expect(classifyFailure(Object.assign(new Error("no"), { code: "PERMISSION_DENIED" })).class).toBe("permanent");
  });
});

describe("decideFailure", () => {
  const base = { attempt: 1, maxAttempts: 3, deadlineAt: null, cancelRequested: false, backoff: { baseMs: 1000, capMs: 10_000 }, now, random: () => 0.5 };
  it("retries a retryable failure with backoff", () => {
    expect(decideFailure({ ...base, failure: classifyFailure(new Error("x")) })).toEqual({ state: "RETRY_WAIT", runAt: new Date(now.getTime() + 500) });
  });
  it("retries a timeout", () => {
    expect(decideFailure({ ...base, failure: classifyFailure(new TimeoutError(5)) }).state).toBe("RETRY_WAIT");
  });
  it("kills permanent failures and exhausted attempts", () => {
    expect(decideFailure({ ...base, failure: classifyFailure(new PermanentError("p")) }).state).toBe("DEAD");
    expect(decideFailure({ ...base, attempt: 3, failure: classifyFailure(new Error("x")) }).state).toBe("DEAD");
  });
  it("cancels when cancellation was requested, whatever the error", () => {
    expect(decideFailure({ ...base, cancelRequested: true, failure: classifyFailure(new Error("x")) }).state).toBe("CANCELLED");
  });
  it("expires when the retry could not start before the deadline", () => {
    expect(decideFailure({ ...base, deadlineAt: new Date(now.getTime() + 100), failure: classifyFailure(new Error("x")) }).state).toBe("EXPIRED");
  });
});

describe("clampEnvelope", () => {
  it("applies defaults", () => {
    expect(clampEnvelope({}, policy)).toEqual({ priority: 50, maxAttempts: 5, timeoutS: 60 });
  });
  it("clamps to the queue's and the tenant's ceilings", () => {
    expect(clampEnvelope({ priority: 100, max_attempts: 99, timeout_s: 9999 }, policy)).toEqual({ priority: 80, maxAttempts: 10, timeoutS: 600 });
    expect(clampEnvelope({ priority: 100, max_attempts: 99 }, { ...policy, tenantMaxPriority: 20, tenantMaxAttempts: 2 })).toMatchObject({
      priority: 20,
      maxAttempts: 2,
    });
  });
});

describe("state machine", () => {
  it("has no way out of a terminal state but a redrive of DEAD", () => {
    for (const s of TERMINAL_STATES) expect(isTerminal(s)).toBe(true);
    const fromTerminal = allTransitions().filter(([from]) => isTerminal(from));
    expect(fromTerminal).toEqual([["DEAD", "READY"]]);
  });
  it("claims only queued work", () => {
    expect(isClaimable("READY") && isClaimable("RETRY_WAIT")).toBe(true);
    expect(isClaimable("RUNNING")).toBe(false);
    expect(canTransition("READY", "SUCCEEDED")).toBe(false);
  });
});
