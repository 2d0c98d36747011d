import type { Db } from "../db";

/**
 * Priority aging for queues with `aging_s`: a waiting job's priority rises linearly with its wait
 * (since `run_at`), from its producer's priority p to 100 after `aging_s` seconds:
 *   effective = p + floor(wait / aging_s · (100 − p)).
 * Maintenance runs this every second over the oldest waiting jobs of each queue
 * (`jobs_aging_idx`), so low-priority work reaches the top class within aging_s (+ one tick) and
 * then competes by virtual time, where it is older than anything arriving since. The producer's
 * priority is kept in `base_priority` (and restored on the finished row).
 */
export const agePriorities = async (db: Db, params: { now?: Date; batch?: number } = {}): Promise<{ aged: number }> => {
  const { rows } = await db.query<{ n: string }>(
    `WITH at AS (SELECT coalesce($1::timestamptz, clock_timestamp()) AS t),
     due AS (
       SELECT j.id,
              least(100, coalesce(j.base_priority, j.priority)
                    + floor(extract(epoch FROM (SELECT t FROM at) - j.run_at) / q.aging_s
                            * (100 - coalesce(j.base_priority, j.priority))))::int AS target
         FROM queues q
         CROSS JOIN LATERAL (
           SELECT j.id, j.priority, j.base_priority, j.run_at FROM jobs j
            WHERE j.queue_id = q.id AND j.state IN ('READY', 'RETRY_WAIT') AND j.priority < 100
              AND j.run_at <= (SELECT t FROM at)
            ORDER BY j.run_at
            LIMIT $2
         ) j
        WHERE q.aging_s IS NOT NULL
     ), aged AS (
       UPDATE jobs j SET base_priority = coalesce(j.base_priority, j.priority), priority = due.target
         FROM due
        WHERE j.id = due.id AND due.target > j.priority AND j.state IN ('READY', 'RETRY_WAIT')
       RETURNING j.id
     )
     SELECT count(*)::text AS n FROM aged`,
    [params.now ?? null, params.batch ?? 1000],
  );
  return { aged: Number(rows[0]?.n ?? 0) };
};
