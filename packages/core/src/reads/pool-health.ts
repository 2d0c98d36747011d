import type { Db } from "../db";
import { listWorkers } from "./console-reads";

/** One pool as the overview's health badge sees it. */
export type PoolHealth = {
  pool_id: string;
  /** Queues routed to the pool; a pool without queues cannot have work. */
  queues: number;
  /** Queues of the pool that are paused (claims stopped on purpose). */
  paused_queues: number;
  /** Workers heartbeating now (see `isWorkerLost`). */
  live_workers: number;
  /** Workers that stopped heartbeating without a clean stop. */
  lost_workers: number;
  /** Jobs waiting for a worker: READY or RETRY_WAIT in the pool's queues. */
  waiting: number;
};

/**
 * Per pool: live and lost workers, queues (paused ones too) and jobs waiting. The overview says
 * "healthy" only when every pool with queues has a live worker; a pool without one, and with jobs
 * waiting, is named. Waiting jobs are counted on the hot table `jobs`, which holds live jobs only
 * (terminal ones move to finished_jobs), so the count is proportional to the backlog.
 */
export const poolHealth = async (db: Db): Promise<PoolHealth[]> => {
  const [pools, workers] = await Promise.all([
    db.query<{ id: string; queues: number; paused_queues: number; waiting: string }>(
      `SELECT p.id,
              (SELECT count(*)::int FROM queues q WHERE q.pool_id = p.id) AS queues,
              (SELECT count(*)::int FROM queues q WHERE q.pool_id = p.id AND q.paused) AS paused_queues,
              (SELECT count(*) FROM jobs j JOIN queues q ON q.id = j.queue_id
                WHERE q.pool_id = p.id AND j.state IN ('READY', 'RETRY_WAIT'))::text AS waiting
         FROM pools p ORDER BY p.id`,
    ),
    listWorkers(db),
  ]);
  return pools.rows.map((p) => {
    const mine = workers.filter((w) => w.pool_id === p.id);
    return {
      pool_id: p.id,
      queues: p.queues,
      paused_queues: p.paused_queues,
      live_workers: mine.filter((w) => w.status === "live").length,
      lost_workers: mine.filter((w) => w.status === "lost").length,
      waiting: Number(p.waiting),
    };
  });
};
