import type { Db } from "../db";

/**
 * Retention: deletes finished jobs older than their queue's `retention_s`, with their attempts,
 * events, effects and idempotency keys, in batches. DEAD jobs are the dead-letter queue and are
 * kept until redriven. Only `finished_jobs` and the side tables are touched: the hot table never
 * carries history, so pruning cannot bloat it. Transition `prune` (sql/transitions.ts).
 */
export const pruneFinished = async (db: Db, params: { now?: Date; batch?: number } = {}): Promise<{ pruned: number }> => {
  const { rows } = await db.query<{ n: string }>(
    `WITH at AS (SELECT coalesce($1::timestamptz, clock_timestamp()) AS t),
     victims AS (
       -- Per queue and terminal state (DEAD is kept), a range scan of
       -- finished_jobs_queue_id_state_finished_at_idx up to the queue's retention cutoff.
       SELECT v.job_id, v.tenant_id, v.idempotency_key
         FROM queues q
         CROSS JOIN unnest(ARRAY['SUCCEEDED', 'CANCELLED', 'EXPIRED']::job_state[]) AS s(state)
         CROSS JOIN LATERAL (
           SELECT f.job_id, f.tenant_id, f.idempotency_key FROM finished_jobs f
            WHERE f.queue_id = q.id AND f.state = s.state
              AND f.finished_at < (SELECT t FROM at) - q.retention_s * interval '1 second'
            ORDER BY f.finished_at
            LIMIT $2
            FOR UPDATE SKIP LOCKED
         ) v
        LIMIT $2
     ), jobs_gone AS (DELETE FROM finished_jobs f USING victims v WHERE f.job_id = v.job_id RETURNING f.job_id), -- primary key
     a AS (DELETE FROM job_attempts x USING victims v WHERE x.job_id = v.job_id),
     e AS (DELETE FROM job_events x USING victims v WHERE x.job_id = v.job_id),
     k AS (DELETE FROM idempotency_keys x USING victims v
            WHERE (x.tenant_id, x.idempotency_key) = (v.tenant_id, v.idempotency_key) AND x.job_id = v.job_id),
     fx AS (DELETE FROM job_effects x USING victims v WHERE x.job_id = v.job_id)
     SELECT count(*)::text AS n FROM jobs_gone`,
    [params.now ?? null, params.batch ?? 5000],
  );
  return { pruned: Number(rows[0]?.n ?? 0) };
};
