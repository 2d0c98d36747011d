import type { Db } from "../db";

/**
 * Retention: deletes finished jobs older than their queue's `retention_s`, with their attempts,
 * events, effects and idempotency keys, in batches. DEAD jobs are the dead-letter queue and are
 * kept until redriven. Only `finished_jobs` and the side tables are touched: the hot table never
 * carries history, so pruning cannot bloat it.
 */
export const pruneFinished = async (db: Db, params: { now?: Date; batch?: number } = {}): Promise<{ pruned: number }> => {
  const { rows } = await db.query<{ n: string }>(
    `WITH at AS (SELECT coalesce($1::timestamptz, clock_timestamp()) AS t),
     victims AS (
       SELECT f.id, f.job_id FROM finished_jobs f JOIN queues q ON q.id = f.queue_id
        WHERE f.state <> 'DEAD' AND f.finished_at < (SELECT t FROM at) - q.retention_s * interval '1 second'
        ORDER BY f.finished_at
        LIMIT $2
        FOR UPDATE OF f SKIP LOCKED
     ), jobs_gone AS (DELETE FROM finished_jobs f USING victims v WHERE f.id = v.id RETURNING f.job_id),
     a AS (DELETE FROM job_attempts x USING victims v WHERE x.job_id = v.job_id),
     e AS (DELETE FROM job_events x USING victims v WHERE x.job_id = v.job_id),
     k AS (DELETE FROM idempotency_keys x USING victims v WHERE x.job_id = v.job_id),
     fx AS (DELETE FROM job_effects x USING victims v WHERE x.job_id = v.job_id)
     SELECT count(*)::text AS n FROM jobs_gone`,
    [params.now ?? null, params.batch ?? 5000],
  );
  return { pruned: Number(rows[0]?.n ?? 0) };
};
