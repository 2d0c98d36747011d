import type { Db } from "../db";
import type { LeaseRef } from "./extend-leases";
import { fenceSql } from "./fence";
import { insertFinished } from "./finish";
import { flowHistogramsSql, flowUpsertSql, msBetween, waitMsSql } from "./flow-write";

// The attempt's run time: start (or claim, for a row never marked started) → the ack.
const RUN_MS = msBetween("coalesce(s.started_at, s.claimed_at)", "(SELECT t FROM at)");

export type Completion = LeaseRef & {
  result: unknown;
  /** The attempt's progress (JSON) reported since its last heartbeat, if any: recorded with the ack. */
  progress?: string | null;
};
export type CompleteOutcome = { completed: string[]; stale: string[] };

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
export const completeJobs = async (db: Db, items: Completion[], now?: Date): Promise<CompleteOutcome> => {
  if (items.length === 0) return { completed: [], stale: [] };
  const { rows } = await db.query<{ id: string }>({
    name: "porter.complete",
    text: `WITH input AS (
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
     ), flow AS (${flowUpsertSql("done", "(SELECT t FROM at)", { succeeded: "count(*)", runs: "count(*)", run_ms_sum: `sum(${RUN_MS})`, wait_ms_sum: `sum(${waitMsSql()})` })}
     ), flow_hist AS (${flowHistogramsSql("(SELECT t FROM at)", [
       { source: "done", kind: "w", ms: waitMsSql() },
       { source: "done", kind: "r", ms: RUN_MS },
     ])})
     SELECT id::text FROM done`,
    values: [
      items.map((i) => i.id),
      items.map((i) => i.leaseToken),
      items.map((i) => JSON.stringify(i.result ?? null)),
      now ?? null,
      items.map((i) => i.attempt),
      items.map((i) => i.progress ?? null),
    ],
  });
  const completed = new Set(rows.map((r) => r.id));
  return { completed: [...completed], stale: items.map((i) => i.id).filter((id) => !completed.has(id)) };
};
