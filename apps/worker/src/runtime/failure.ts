import type { TJobError } from "@porter/contracts";
import { CancelledError, type ClaimedJob, classifyFailure, decideFailure, type Failure, TimeoutError } from "@porter/core";

/**
 * The failure record of an attempt, as `failJobs` takes it: classified (`classifyFailure`),
 * decided (`decideFailure`, with the queue's backoff from the claimed job) and carrying the
 * structured error {code, class, message, worker_version, attempt, trace_id, last_checkpoint} —
 * no stack, and credentials stripped from the message. `last_checkpoint` is the job's last durable
 * checkpoint (validated and bounded by the SDK when it was written; the claim's if this attempt
 * wrote none).
 *
 * A handler that stops because its signal aborted usually throws an AbortError of its own: when
 * the abort's reason is a timeout or a cancel, that reason is the cause recorded.
 */
export const buildFailure = (input: {
  job: ClaimedJob;
  error: unknown;
  abortReason: unknown;
  cancelRequested: boolean;
  version: string;
  lastCheckpoint: unknown;
  now: Date;
  random?: () => number;
}): Failure => {
  const { job, abortReason } = input;
  const cause = abortReason instanceof TimeoutError || abortReason instanceof CancelledError ? abortReason : input.error;
  const failure = classifyFailure(cause);
  const next = decideFailure({
    failure,
    attempt: job.attempt,
    maxAttempts: job.maxAttempts,
    deadlineAt: job.deadlineAt,
    cancelRequested: input.cancelRequested,
    backoff: { baseMs: job.backoffBaseMs, capMs: job.backoffCapMs },
    now: input.now,
    random: input.random,
  });
  const isCancelled = next.state === "CANCELLED";
  const error: TJobError = {
    code: isCancelled ? "CANCELLED" : failure.code,
    class: isCancelled ? "cancelled" : failure.class,
    message: redactSecrets(failure.message),
    worker_version: input.version,
    attempt: job.attempt,
    trace_id: job.traceId,
    last_checkpoint: input.lastCheckpoint ?? null,
  };
  const outcome = isCancelled ? "cancelled" : failure.class === "timeout" ? "timed_out" : "failed";
  return { id: job.id, leaseToken: job.leaseToken, attempt: job.attempt, outcome, error, next };
};

/**
 * Strips credentials a failure message may carry (a connection string in a driver error, a bearer
 * token echoed by an HTTP client) before it is stored in the structured error and shown to tenants.
 */
export const redactSecrets = (message: string): string =>
  message
    .replace(/([a-z][a-z0-9+.-]*:\/\/)[^\s/@:]+(?::[^\s/@]*)?@/gi, "$1***@")
    .replace(/\b(bearer|basic)\s+[a-z0-9._~+/=-]{8,}/gi, "$1 ***")
    .replace(/\b(password|passwd|pwd|secret|token|api[_-]?key)(["']?\s*[:=]\s*["']?)[^\s"',;&}\])]+/gi, "$1$2***");
