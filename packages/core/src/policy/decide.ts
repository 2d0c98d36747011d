import { type BackoffPolicy, nextRunAt } from "./backoff";
import type { ClassifiedFailure } from "./classify";

export type FailureDecision = { state: "RETRY_WAIT"; runAt: Date } | { state: "DEAD" } | { state: "CANCELLED" } | { state: "EXPIRED" };

/**
 * What a failed attempt leads to: cancelled work stops; permanent failures and exhausted attempts
 * are dead; otherwise a retry after backoff, unless that retry could not start before the
 * deadline, in which case the job expires.
 */
export const decideFailure = (input: {
  failure: ClassifiedFailure;
  attempt: number;
  maxAttempts: number;
  deadlineAt: Date | null;
  cancelRequested: boolean;
  backoff: BackoffPolicy;
  now: Date;
  random?: () => number;
}): FailureDecision => {
  const { failure, attempt, maxAttempts, deadlineAt, now } = input;
  if (failure.class === "cancelled" || input.cancelRequested) return { state: "CANCELLED" };
  if (failure.class === "permanent") return { state: "DEAD" };
  if (attempt >= maxAttempts) return { state: "DEAD" };
  const runAt = nextRunAt(attempt, input.backoff, now, input.random, failure.retryAfterMs);
  if (deadlineAt && runAt >= deadlineAt) return { state: "EXPIRED" };
  return { state: "RETRY_WAIT", runAt };
};
