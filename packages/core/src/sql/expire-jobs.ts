import type { Db } from "../db";
import { insertFinished } from "./finish";
import { flowUpsertSql } from "./flow-write";

/**
 * The statement of {@link expireJobs}: $1 the clock (null: the server's), $2 the batch. Each part
 * reads through an index: `jobs_deadline_idx` and `jobs_retry_wait_idx` in their own order (without
 * the ORDER BY, at 1M ready jobs none of which had a deadline, the planner expected a third of the
 * table to be late and took a sequential scan to find the first $2), then the rows by primary key
 * (`= ANY (ARRAY(…))`, which the planner cannot turn into a hash join over a scan of `jobs`, as it
 * did with `USING late`). It runs on every maintenance pass, and a sequential scan of `jobs` cost
 * 390–420 ms a pass at 1M ready jobs (docs/performance.md, "Claim at depth (f): the maintenance pass read the whole table").
 */
export const EXPIRE_JOBS_SQL = `WITH at AS (SELECT coalesce($1::timestamptz, clock_timestamp()) AS t),
     late AS (
       SELECT id FROM jobs
        WHERE deadline_at <= (SELECT t FROM at) AND state IN ('READY', 'RETRY_WAIT')
        ORDER BY deadline_at -- jobs_deadline_idx's order (the oldest deadline first): see above
        LIMIT $2 FOR UPDATE SKIP LOCKED
     ), done AS (
       DELETE FROM jobs j WHERE j.id = ANY (ARRAY(SELECT id FROM late)) AND j.state IN ('READY', 'RETRY_WAIT')
       RETURNING j.*
     ), fin AS (${insertFinished({
       state: "'EXPIRED'",
       finishedAt: "(SELECT t FROM at)",
       error: `jsonb_build_object('code', 'DEADLINE_EXCEEDED', 'class', 'expired', 'message',
                 'deadline ' || done.deadline_at::text || ' passed before the job could run', 'worker_version', NULL,
                 'attempt', done.attempt, 'trace_id', done.trace_id, 'last_checkpoint', done.checkpoint)`,
     })}
     ), ev AS (
       INSERT INTO job_events (job_id, at, kind, attempt, data)
       SELECT job_id, (SELECT t FROM at), 'expired', attempt, jsonb_build_object('deadline_at', deadline_at) FROM done
     ), flow AS (${flowUpsertSql("done", "(SELECT t FROM at)", { expired: "count(*)" })}
     ), promoted AS (
       UPDATE jobs SET state = 'READY'
        WHERE id = ANY (ARRAY(SELECT id FROM jobs WHERE state = 'RETRY_WAIT' AND run_at <= (SELECT t FROM at)
                               AND (deadline_at IS NULL OR deadline_at > (SELECT t FROM at))
                               ORDER BY run_at LIMIT $2 FOR UPDATE SKIP LOCKED))
       RETURNING id
     )
     SELECT (SELECT count(*) FROM done)::text AS expired, (SELECT count(*) FROM promoted)::text AS promoted`;

/**
 * Moves queued work whose deadline passed to EXPIRED (running work is bounded by its lease, which
 * never outlives the deadline, and is expired by lease rescue). Also promotes RETRY_WAIT jobs whose
 * `run_at` was reached to READY, so counts by state tell the truth (claims take both anyway).
 * Expiries are added to the flow rollups in the same statement. Transitions `expire` and `promote` (sql/transitions.ts).
 */
export const expireJobs = async (db: Db, params: { now?: Date; batch?: number } = {}): Promise<{ expired: number; promoted: number }> => {
  const { rows } = await db.query<{ expired: string; promoted: string }>(EXPIRE_JOBS_SQL, [params.now ?? null, params.batch ?? 1000]);
  return { expired: Number(rows[0]?.expired ?? 0), promoted: Number(rows[0]?.promoted ?? 0) };
};
