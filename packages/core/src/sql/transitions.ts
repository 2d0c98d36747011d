import type { JobState } from "../state";

/** A job's state, or `null` for "no job" (before the enqueue, after the retention deleted it). */
export type StateOrNone = JobState | null;

/**
 * A named transition: the one function in `core/sql` that moves jobs from any of `from` to any of
 * `to` (the edges are `from × to`, every one of them an edge of the state machine in state.ts).
 * A job changes table when it finishes (`jobs` → `finished_jobs`) and when it is redriven: that
 * is still one transition, written by one statement.
 */
export type Transition = {
  name: string;
  from: readonly StateOrNone[];
  to: readonly StateOrNone[];
  /** The exported functions that make it. */
  functions: readonly string[];
  /** The file that exports the functions and, unless `statement` says otherwise, holds the statement (repository-relative). */
  source: string;
  /** The file of the statement, when it lives apart from the function (the enqueue's insert, the rescues' shared one). */
  statement?: string;
  /** The PL/pgSQL routine that holds the statement, when it is one (the claim's, which `porter_claim` and the ack's hand-over call). */
  routine?: string;
  /** What the edge means, for the diagram. */
  label: string;
  /** The guard: the `WHERE` of the write. */
  guard: string;
};

const SQL = "packages/core/src/sql";

/** The two rescues share one statement (sql/rescue.ts) and its four ways out of RUNNING. */
const RESCUE = { from: ["RUNNING"], to: ["READY", "DEAD", "CANCELLED", "EXPIRED"], statement: `${SQL}/rescue.ts` } as const;

/**
 * Every job state change Porter makes. A test checks it both ways (transitions.int.test.ts): each
 * statement in the source that writes a job's state belongs to one of these, and a lifecycle run
 * with a recording trigger observes exactly these edges, each from the transition that ran.
 * docs/state-machine.md is generated from it (`npm run docs:states`).
 */
export const JOB_TRANSITIONS = [
  {
    name: "enqueue",
    from: [null],
    to: ["READY"],
    functions: ["enqueueJobs"],
    source: `${SQL}/enqueue-jobs.ts`,
    statement: `${SQL}/enqueue-insert.ts`,
    label: "durable before job_id is returned",
    guard: "idempotency ledger `ON CONFLICT DO NOTHING`; same key + other payload → 409, whole batch rolled back",
  },
  {
    name: "claim",
    from: ["READY", "RETRY_WAIT"],
    to: ["RUNNING"],
    functions: ["claimJobs"],
    source: `${SQL}/claim-jobs.ts`,
    routine: "porter_claim_rows",
    label: "one statement, FOR UPDATE SKIP LOCKED, lease + fencing token, attempt + 1; also by an ack's hand-over of a capped queue's room",
    guard: "`state IN ('READY','RETRY_WAIT') AND run_at <= now AND deadline not passed`, not paused, under caps, row lock skipped if taken",
  },
  {
    name: "complete",
    from: ["RUNNING"],
    to: ["SUCCEEDED"],
    functions: ["completeJobs"],
    source: `${SQL}/complete-jobs.ts`,
    label: "ack: result + transition in one statement, after effects",
    guard: "`state = 'RUNNING' AND lease_token = $token AND attempt = $attempt`",
  },
  {
    name: "fail",
    from: ["RUNNING"],
    to: ["RETRY_WAIT", "DEAD", "CANCELLED", "EXPIRED"],
    functions: ["failJobs"],
    source: `${SQL}/fail-jobs.ts`,
    label: "failed attempt: retry with backoff, dead, cancelled at a safe point, or past its deadline",
    guard: "same fence as the ack; the next state comes from `policy/decide.ts`",
  },
  {
    name: "hand_back",
    from: ["RUNNING"],
    to: ["READY"],
    functions: ["handBackJobs"],
    source: `${SQL}/hand-back-jobs.ts`,
    label: "drain hand-back (attempt not burned)",
    guard: "same fence as the ack; `attempt - 1`",
  },
  {
    ...RESCUE,
    name: "rescue_expired_lease",
    functions: ["rescueExpiredLeases"],
    source: `${SQL}/rescue-expired-leases.ts`,
    label: "lease expired (attempt burned if it started)",
    guard: "`state = 'RUNNING' AND lease_until < now`, SKIP LOCKED (the statement is shared with the lost-worker rescue)",
  },
  {
    ...RESCUE,
    name: "rescue_lost_worker",
    functions: ["rescueLostWorkers"],
    source: `${SQL}/rescue-lost-workers.ts`,
    label: "worker lost (stale heartbeat row)",
    guard: "`state = 'RUNNING'` and its worker's `workers` row stale past `WORKER_LOST_AFTER_MS` (not in the first minutes of a restarted server), SKIP LOCKED",
  },
  {
    name: "cancel",
    from: ["READY", "RETRY_WAIT"],
    to: ["CANCELLED"],
    functions: ["cancelJob", "cancelJobs"],
    source: `${SQL}/cancel-job.ts`,
    label: "cancel (at once)",
    guard: "`state IN ('READY','RETRY_WAIT')`, tenant and job-type scope; a running job gets a cancel request instead (no state change)",
  },
  {
    name: "expire",
    from: ["READY", "RETRY_WAIT"],
    to: ["EXPIRED"],
    functions: ["expireJobs"],
    source: `${SQL}/expire-jobs.ts`,
    label: "deadline_at passed before it could run",
    guard: "`state IN ('READY','RETRY_WAIT') AND deadline_at <= now`, SKIP LOCKED",
  },
  {
    name: "promote",
    from: ["RETRY_WAIT"],
    to: ["READY"],
    functions: ["expireJobs"],
    source: `${SQL}/expire-jobs.ts`,
    label: "run_at reached (maintenance; claims take due RETRY_WAIT too)",
    guard: "`state = 'RETRY_WAIT' AND run_at <= now` and deadline not passed, SKIP LOCKED",
  },
  {
    name: "redrive",
    from: ["DEAD"],
    to: ["READY"],
    functions: ["redriveJobs"],
    source: `${SQL}/redrive-jobs.ts`,
    label: "redrive at once (audited; attempt budget reset)",
    guard: "`state = 'DEAD'`; partial or past-deadline jobs skipped unless forced",
  },
  {
    name: "redrive_run",
    from: ["DEAD"],
    to: ["READY"],
    functions: ["advanceRedrives"],
    source: "packages/core/src/dlq/redrive-runner.ts",
    statement: `${SQL}/redrive-jobs.ts`,
    label: "a durable redrive's batch, at its velocity (audited; attempt budget reset; lineage)",
    guard: "`state = 'DEAD'`, the item pending, eligible again by `porter_redrive_eligibility`; redrive row and finished rows locked",
  },
  {
    name: "prune",
    from: ["SUCCEEDED", "CANCELLED", "EXPIRED"],
    to: [null],
    functions: ["pruneFinished"],
    source: `${SQL}/prune-finished.ts`,
    label: "retention (DEAD is kept until redriven)",
    guard: "`finished_at < now - queue.retention_s`, per queue and state, SKIP LOCKED",
  },
] as const satisfies readonly Transition[];

export type TransitionName = (typeof JOB_TRANSITIONS)[number]["name"];

/**
 * Writes to a job row that keep its state (so no transition), listed for the reader: what each
 * changes. The lifecycle test checks they move no job between states.
 */
export const STATE_KEEPING_WRITES = [
  { name: "start", functions: ["startJobs"], source: `${SQL}/start-jobs.ts`, changes: "`started_at` of a prefetched RUNNING attempt, same fence as the ack" },
  {
    name: "extend_lease",
    functions: ["extendLeases"],
    source: `${SQL}/extend-leases.ts`,
    changes: "`lease_until` of a RUNNING attempt (heartbeat), bounded by deadline and `claimed_at + max_runtime_s`",
  },
  {
    name: "request_cancel",
    functions: ["cancelJob", "cancelJobs"],
    source: `${SQL}/cancel-job.ts`,
    changes: "`cancel_requested_at` of a RUNNING job; its handler stops at a safe point and fails as CANCELLED",
  },
  {
    name: "retry_now",
    functions: ["retryJobsNow"],
    source: `${SQL}/retry-jobs-now.ts`,
    changes: "`run_at = now` of a RETRY_WAIT job: the next claim takes it",
  },
  { name: "age", functions: ["agePriorities"], source: `${SQL}/age-priorities.ts`, changes: "`priority` of long-waiting READY jobs (aging)" },
] as const;

/** The transition called `name`. */
export const transition = (name: TransitionName): Transition => JOB_TRANSITIONS.find((t) => t.name === name)!;

/** A transition's edges, `from × to`. */
export const edgesOf = (t: Transition): Array<[StateOrNone, StateOrNone]> => t.from.flatMap((f) => t.to.map((to) => [f, to] as [StateOrNone, StateOrNone]));
