import { CancelledError, type ClaimedJob, TimeoutError } from "@porter/core";
import { PermanentError, RetryableError } from "@porter/sdk";
import { describe, expect, it } from "vitest";
import { claimedJob } from "../testing/claimed-job";
import { buildFailure, redactSecrets } from "./failure";

const now = new Date("2026-11-30T10:00:00Z");
const job = (over: Partial<ClaimedJob> = {}): ClaimedJob => claimedJob(over);
const fail = (error: unknown, over: { job?: Partial<ClaimedJob>; abortReason?: unknown; cancelRequested?: boolean; lastCheckpoint?: unknown } = {}) =>
  buildFailure({
    job: job(over.job),
    error,
    abortReason: over.abortReason,
    cancelRequested: over.cancelRequested ?? false,
    version: "1.2.3",
    lastCheckpoint: over.lastCheckpoint,
    now,
    random: () => 0.5,
  });
const abortError = () => Object.assign(new Error("This operation was aborted"), { name: "AbortError" });

describe("buildFailure", () => {
  it("schedules a retryable failure with the queue's backoff and a structured error", () => {
    expect(fail(new RetryableError("flaky", { code: "UPSTREAM" }), { lastCheckpoint: { step: 2 } })).toEqual({
      id: "7",
      leaseToken: "42",
      attempt: 1,
      outcome: "failed",
      next: { state: "RETRY_WAIT", runAt: new Date(now.getTime() + 500) },
      error: { code: "UPSTREAM", class: "retryable", message: "flaky", worker_version: "1.2.3", attempt: 1, trace_id: "trace-1", last_checkpoint: { step: 2 } },
    });
  });

  it("honours a provider's Retry-After as the minimum backoff", () => {
    const { next } = fail(new RetryableError("429", { retryAfterMs: 5_000 }));
    expect(next).toEqual({ state: "RETRY_WAIT", runAt: new Date(now.getTime() + 5_000) });
  });

  it("kills permanent failures and the last attempt's retryable failure", () => {
    expect(fail(new PermanentError("bad", { code: "NOPE" })).next).toEqual({ state: "DEAD" });
    expect(fail(new Error("flaky"), { job: { attempt: 3 } })).toMatchObject({ next: { state: "DEAD" }, error: { class: "retryable", code: "UNKNOWN" } });
  });

  it("records the abort's reason, not the handler's AbortError: timeout → timed_out, cancel → cancelled", () => {
    expect(fail(abortError(), { abortReason: new TimeoutError(1000) })).toMatchObject({
      outcome: "timed_out",
      next: { state: "RETRY_WAIT" },
      error: { code: "TIMEOUT", class: "timeout" },
    });
    expect(fail(abortError(), { abortReason: new CancelledError("operator"), cancelRequested: true })).toMatchObject({
      outcome: "cancelled",
      next: { state: "CANCELLED" },
      error: { code: "CANCELLED", class: "cancelled", message: "cancelled: operator" },
    });
  });

  it("a failure while a cancel is pending ends CANCELLED", () => {
    expect(fail(new RetryableError("flaky"), { cancelRequested: true })).toMatchObject({ outcome: "cancelled", next: { state: "CANCELLED" } });
  });

  it("expires a retry that could not start before the deadline", () => {
    expect(fail(new RetryableError("flaky"), { job: { deadlineAt: new Date(now.getTime() + 100) } }).next).toEqual({ state: "EXPIRED" });
  });
});

describe("redactSecrets", () => {
  it("removes credentials from URLs, bearer tokens and key=value secrets", () => {
    expect(redactSecrets("connect to postgres://porter:s3cr3t@db.internal:5432/porter failed")).toBe(
      "connect to postgres://***@db.internal:5432/porter failed",
    );
    expect(redactSecrets("401 with Authorization: Bearer abcdefghijklmnop")).toBe("401 with Authorization: Bearer ***");
    expect(redactSecrets("provider said: Bearer abcdefghijklmnop expired")).toBe("provider said: Bearer *** expired");
    expect(redactSecrets('bad config {"api_key": "sk-123456", password=hunter2}')).toBe('bad config {"api_key": "***", password=***}');
  });

  it("leaves ordinary messages alone", () => {
    const message = "diag.fail: transient failure on attempt 2 (see https://status.example.com/incidents)";
    expect(redactSecrets(message)).toBe(message);
  });
});
