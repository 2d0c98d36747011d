/** Per-queue retry timing. */
export type BackoffPolicy = { baseMs: number; capMs: number };

/**
 * When the next attempt may run after `attempt` failed: exponential backoff with full jitter
 * (a uniformly random delay in [0, min(cap, base·2^(attempt−1))]), never sooner than a
 * `Retry-After` the failure reported.
 */
export const nextRunAt = (attempt: number, policy: BackoffPolicy, now: Date, random: () => number = Math.random, retryAfterMs?: number): Date => {
  const exponent = Math.min(Math.max(attempt - 1, 0), 30);
  const ceiling = Math.min(policy.capMs, policy.baseMs * 2 ** exponent);
  const jittered = Math.floor(random() * ceiling);
  const delay = Math.max(jittered, retryAfterMs ?? 0);
  return new Date(now.getTime() + delay);
};
