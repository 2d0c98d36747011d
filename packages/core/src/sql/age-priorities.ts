import type { Db } from "../db";

/**
 * Priority aging for queues with `aging_s`: a waiting job's priority rises linearly with its wait
 * (since `run_at`), from its producer's priority p to 100 after `aging_s` seconds:
 *   effective = p + floor(wait / aging_s · (100 − p)).
 * Maintenance runs this every second over the oldest waiting jobs of each queue
 * (`jobs_aging_idx`), so low-priority work reaches the top class within aging_s (+ one tick) and
 * then competes by virtual time, where it is older than anything arriving since. The producer's
 * priority is kept in `base_priority` (and restored on the finished row). One `porter_age` call
 * (packages/core/src/sql/routines/aging.sql): the pass holds the aging lock of the pools it
 * touches, so their claims wait for it (a few ms) rather than skip the rows it is rewriting.
 */
export const agePriorities = async (db: Db, params: { now?: Date; batch?: number } = {}): Promise<{ aged: number }> => {
  const { rows } = await db.query<{ n: string }>(`SELECT porter_age($1::timestamptz, $2::int)::text AS n`, [params.now ?? null, params.batch ?? 1000]);
  return { aged: Number(rows[0]?.n ?? 0) };
};
