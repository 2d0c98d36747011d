import type { TJobState } from "@porter/contracts";

/**
 * The states of a job and who moves it. Live states are kept in the `jobs` table; terminal states
 * in `finished_jobs` (a job changes table when it finishes, and back when it is redriven).
 *
 * - READY: waiting to be claimed. Entered by enqueue, lease rescue, drain hand-back, redrive.
 *   Left by a claim (→ RUNNING), cancel (→ CANCELLED) or its deadline (→ EXPIRED).
 * - RETRY_WAIT: a retryable failure scheduled `run_at` for the next attempt. Claimable again once
 *   `run_at` is reached (maintenance also promotes it to READY then).
 * - RUNNING: claimed under a lease with a fencing token. Left by ack (→ SUCCEEDED), a failure
 *   (→ RETRY_WAIT or DEAD), cancellation (→ CANCELLED), lease expiry (→ READY or DEAD), drain
 *   hand-back (→ READY, the attempt not burned), or its deadline (→ EXPIRED).
 * - SUCCEEDED: terminal; the result was committed with the transition, after the effects.
 * - DEAD: terminal until an operator redrives it (→ READY); carries a structured error.
 * - CANCELLED: terminal; queued work is cancelled at once, running work stops at a safe point.
 * - EXPIRED: terminal; `deadline_at` passed before the job could finish.
 */
export type JobState = TJobState;

export const LIVE_STATES = ["READY", "RETRY_WAIT", "RUNNING"] as const satisfies readonly JobState[];
export const TERMINAL_STATES = ["SUCCEEDED", "DEAD", "CANCELLED", "EXPIRED"] as const satisfies readonly JobState[];
export type LiveState = (typeof LIVE_STATES)[number];
export type TerminalState = (typeof TERMINAL_STATES)[number];

/** True for states a job never leaves on its own (DEAD leaves only by an audited redrive). */
export const isTerminal = (state: JobState): state is TerminalState =>
  (TERMINAL_STATES as readonly JobState[]).includes(state);

/** True for states the claim statement may pick up (once `run_at` has been reached). */
export const isClaimable = (state: JobState): boolean => state === "READY" || state === "RETRY_WAIT";

/** True when a cancel request can take effect at once, without the handler's cooperation. */
export const isCancellableAtOnce = (state: JobState): boolean => isClaimable(state);

const TRANSITIONS: Record<JobState, readonly JobState[]> = {
  READY: ["RUNNING", "CANCELLED", "EXPIRED"],
  RETRY_WAIT: ["READY", "RUNNING", "CANCELLED", "EXPIRED"],
  RUNNING: ["SUCCEEDED", "RETRY_WAIT", "DEAD", "CANCELLED", "READY", "EXPIRED"],
  SUCCEEDED: [],
  DEAD: ["READY"],
  CANCELLED: [],
  EXPIRED: [],
};

/** Whether the state machine allows `from → to` (docs/state-machine.md draws the same table). */
export const canTransition = (from: JobState, to: JobState): boolean => TRANSITIONS[from].includes(to);

export const allTransitions = (): Array<[JobState, JobState]> =>
  Object.entries(TRANSITIONS).flatMap(([from, tos]) => tos.map((to) => [from as JobState, to] as [JobState, JobState]));
