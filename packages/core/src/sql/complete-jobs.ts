import type { Db } from "../db";
import { integerArray, textArray } from "./array-literal";
import { CLAIM_COLUMNS, CLAIM_ORDER_AT, type ClaimedJob, type ClaimRow, claimTypes, inClaimOrder, toClaimedJob } from "./claim-jobs";
import type { LeaseRef } from "./extend-leases";
import { fenceSql } from "./fence";
import { insertFinished } from "./finish";
import { flowEndedSql, msBetween, waitMsSql } from "./flow-write";

// The attempt's run time: start (or claim, for a row never marked started) → the ack.
const RUN_MS = msBetween("coalesce(s.started_at, s.claimed_at)", "(SELECT t FROM at)");

export type Completion = LeaseRef & {
  result: unknown;
  /** The attempt's progress (JSON) reported since its last heartbeat, if any: recorded with the ack. */
  progress?: string | null;
};
export type CompleteOutcome = {
  completed: string[];
  stale: string[];
  /** The jobs `handover` claimed (none without it). */
  handedOver: ClaimedJob[];
};

/**
 * Hands the room of acked jobs of capped queues to those queues' next jobs, in the ack's statement
 * (`porter_handover`, routines/claim.sql): for each acked job of one of `queueIds`, at most one job
 * of its queue is claimed for `workerId` — `limit` in all, the first `start` marked started as a
 * claim marks them (the rest go through the worker's prefetch buffer). A pool with tenant quotas
 * or start rates, or a queue with a limited resource key, declines (no rows): the worker's claim
 * loop claims as before.
 */
export type Handover = {
  poolId: string;
  workerId: string;
  queueIds: string[];
  limit: number;
  /** How many of them, in claim order, go into free slots at once and are marked started (default none). */
  start?: number;
};

/**
 * Acks a batch of attempts: each job's result and its SUCCEEDED transition commit together, in
 * one statement, after the handler's effects. A row matches only while it is RUNNING under the
 * same fencing token and attempt; anything else (rescued, cancelled, re-claimed) is reported as stale and left
 * untouched. Runs with synchronous_commit on: an ack is a promise of durability. The successful
 * attempt needs no `job_attempts` row: the finished row holds its claim time, worker and end
 * (the timeline reads them from there), which saves a write and two index entries per job.
 * A progress report no heartbeat carried yet goes with the ack (the finished row keeps the last
 * value). The flow rollups (succeeded, run time; the wait and run histograms of these attempts, in
 * one upsert) are added in the same statement (flow-write.ts).
 * Transition `complete` (sql/transitions.ts).
 */
export const completeJobs = async (db: Db, items: Completion[], now?: Date, handover?: Handover): Promise<CompleteOutcome> => {
  if (items.length === 0) return { completed: [], stale: [], handedOver: [] };
  const values: unknown[] = [
    integerArray(items, (i) => i.id),
    integerArray(items, (i) => i.leaseToken),
    textArray(items, (i) => (i.result === null || i.result === undefined ? "null" : JSON.stringify(i.result))),
    now ?? null,
    integerArray(items, (i) => i.attempt),
    textArray(items, (i) => i.progress ?? null),
  ];
  if (!handover || handover.queueIds.length === 0 || handover.limit <= 0) {
    const { rows } = await db.query<{ id: string }>({ name: "porter.complete", text: COMPLETE_TEXT, values });
    return outcome(
      items,
      rows.map((r) => r.id),
      [],
    );
  }
  const { rows } = await db.query<[string | null, ...ClaimRow]>({
    name: "porter.complete.handover",
    text: HANDOVER_TEXT,
    values: [...values, handover.poolId, handover.workerId, handover.queueIds, handover.limit, Math.max(0, handover.start ?? 0)],
    rowMode: "array",
    types: claimTypes,
  });
  const acked: string[] = [];
  const handed: ClaimRow[] = [];
  for (const r of rows) {
    if (r[0] !== null) acked.push(r[0]);
    else handed.push(r.slice(1) as ClaimRow);
  }
  return outcome(items, acked, inClaimOrder(handed, CLAIM_ORDER_AT).map(toClaimedJob));
};

const outcome = (items: Completion[], acked: string[], handedOver: ClaimedJob[]): CompleteOutcome => {
  const completed = new Set(acked);
  return { completed: [...completed], stale: items.map((i) => i.id).filter((id) => !completed.has(id)), handedOver };
};

/** The ack's CTEs: the fenced delete (`done`), the finished rows, the flow rollups. */
const COMPLETE_CTES = `WITH input AS (
       SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::text[], $5::int[], $6::text[]) AS t(id, token, result, attempt, progress)
     ), at AS (SELECT coalesce($4::timestamptz, clock_timestamp()) AS t),
     done AS (
       DELETE FROM jobs j USING input i
        WHERE ${fenceSql()}
       RETURNING j.*, i.result, i.progress AS last_progress
     ), fin AS (${insertFinished({
       state: "'SUCCEEDED'",
       finishedAt: "(SELECT t FROM at)",
       result: "done.result::jsonb",
       partial: "false",
       progress: "coalesce(done.last_progress::jsonb, done.progress)",
     })}
     ), ${flowEndedSql("flow", "done", "(SELECT t FROM at)", { wait: waitMsSql(), run: RUN_MS }, { succeeded: "sum(s.n)", runs: "sum(s.n)", run_ms_sum: "sum(s.r)", wait_ms_sum: "sum(s.w)" })}`;

/** The ack without the hand-over. */
const COMPLETE_TEXT = `${COMPLETE_CTES} SELECT id::text FROM done`;
/** The ack's statement as core sends it, for bench/src/probe/claim-callgrind.ts. */
export const COMPLETE_SQL_FOR_PROBES = COMPLETE_TEXT;

/**
 * The ack with the hand-over: `porter_handover` gets the queue of each acked row of the named
 * queues — read from `done`, so the fenced delete has run and only rows this statement took out of
 * RUNNING count. Rows: an acked id with the claim columns null, or a handed-over job (its id null).
 */
const HANDOVER_TEXT = `${COMPLETE_CTES},
     handed AS (
       SELECT * FROM porter_handover($7, $8,
                                     (SELECT array_agg(d.queue_id) FROM done d WHERE d.queue_id = ANY ($9::text[])),
                                     $10, NULL, $11)
     )
     SELECT NULL::text, ${CLAIM_COLUMNS} FROM handed
     UNION ALL
     SELECT id::text, ${Array.from({ length: CLAIM_COLUMNS.split(",").length }, () => "NULL").join(", ")} FROM done`;
