import type { TJobState } from "@porter/contracts";

/**
 * The states of a job and who moves it (the named transitions of sql/transitions.ts, in
 * backticks). Live states are kept in the `jobs` table; terminal states in `finished_jobs` (a job
 * changes table when it finishes, and back when it is redriven).
 *
 * - READY: waiting to be claimed. Entered by `enqueue`, a rescue (`rescue_expired_lease`,
 *   `rescue_lost_worker`), drain `hand_back`, `promote` of a due retry, `redrive`. Left by a
 *   `claim` (→ RUNNING), `cancel` (→ CANCELLED) or its deadline (`expire` → EXPIRED).
 * - RETRY_WAIT: a retryable failure scheduled `run_at` for the next attempt. Claimable again once
 *   `run_at` is reached (maintenance also promotes it to READY then); `cancel` and `expire` as READY.
 * - RUNNING: claimed under a lease with a fencing token. Left by the ack (`complete` → SUCCEEDED),
 *   a failure (`fail` → RETRY_WAIT, DEAD, CANCELLED at a safe point after a cancel request, or
 *   EXPIRED), a rescue (→ READY, DEAD, CANCELLED or EXPIRED), or drain `hand_back` (→ READY, the
 *   attempt not burned).
 * - SUCCEEDED: terminal; the result was committed with the transition, after the effects.
 * - DEAD: terminal until an operator redrives it (→ READY); carries a structured error. Kept by
 *   retention (the dead-letter queue).
 * - CANCELLED: terminal; queued work is cancelled at once, running work stops at a safe point.
 * - EXPIRED: terminal; `deadline_at` passed before the job could finish.
 *
 * SUCCEEDED, CANCELLED and EXPIRED jobs are deleted past their queue's retention (`prune`).
 */
export type JobState = TJobState;

export const LIVE_STATES = ["READY", "RETRY_WAIT", "RUNNING"] as const satisfies readonly JobState[];
export const TERMINAL_STATES = ["SUCCEEDED", "DEAD", "CANCELLED", "EXPIRED"] as const satisfies readonly JobState[];
export type LiveState = (typeof LIVE_STATES)[number];
export type TerminalState = (typeof TERMINAL_STATES)[number];

/** True for states a job never leaves on its own (DEAD leaves only by an audited redrive). */
export const isTerminal = (state: JobState): state is TerminalState => (TERMINAL_STATES as readonly JobState[]).includes(state);

/** True for states the claim statement may pick up (once `run_at` has been reached). */
export const isClaimable = (state: JobState): boolean => state === "READY" || state === "RETRY_WAIT";

/** The state machine's edges; the named transitions that move jobs along them are in sql/transitions.ts. */
const EDGES: Record<JobState, readonly JobState[]> = {
  READY: ["RUNNING", "CANCELLED", "EXPIRED"],
  RETRY_WAIT: ["READY", "RUNNING", "CANCELLED", "EXPIRED"],
  RUNNING: ["SUCCEEDED", "RETRY_WAIT", "DEAD", "CANCELLED", "READY", "EXPIRED"],
  SUCCEEDED: [],
  DEAD: ["READY"],
  CANCELLED: [],
  EXPIRED: [],
};

/** The state a job is created in (enqueue). */
export const ENTRY_STATE = "READY" as const satisfies JobState;
/** Terminal states whose jobs retention deletes (DEAD is the dead-letter queue, kept until redriven). */
export const PRUNABLE_STATES = ["SUCCEEDED", "CANCELLED", "EXPIRED"] as const satisfies readonly TerminalState[];

/**
 * Whether the state machine allows `from → to` (docs/state-machine.md draws the same table). `null`
 * is "no job": `null → READY` is the enqueue, `SUCCEEDED/CANCELLED/EXPIRED → null` the retention.
 */
export const canTransition = (from: JobState | null, to: JobState | null): boolean => {
  if (from === null) return to === ENTRY_STATE;
  if (to === null) return (PRUNABLE_STATES as readonly JobState[]).includes(from);
  return EDGES[from].includes(to);
};

/** Every edge between two states (the entry and the retention, with `null`, are not included). */
export const allTransitions = (): Array<[JobState, JobState]> =>
  Object.entries(EDGES).flatMap(([from, tos]) => tos.map((to) => [from as JobState, to] as [JobState, JobState]));
