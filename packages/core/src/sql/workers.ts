import type { Db } from "../db";

export type WorkerInfo = { id: string; poolId: string; host: string; pid: number; version: string; concurrency: number };

/** Registers a worker process (or re-registers it after a restart with the same id). */
export const registerWorker = async (db: Db, w: WorkerInfo): Promise<void> => {
  await db.query(
    `INSERT INTO workers (id, pool_id, host, pid, version, concurrency)
     VALUES ($1, $2, $3, $4, $5, $6)
     ON CONFLICT (id) DO UPDATE SET heartbeat_at = now(), stopped_at = NULL, draining = false`,
    [w.id, w.poolId, w.host, w.pid, w.version, w.concurrency],
  );
};

/** A worker's liveness, running count and draining flag, written every few seconds. */
export const heartbeatWorker = async (db: Db, params: { id: string; running: number; draining: boolean }): Promise<void> => {
  await db.query(`UPDATE workers SET heartbeat_at = now(), running = $2, draining = $3 WHERE id = $1`, [params.id, params.running, params.draining]);
};

/** Marks a worker stopped (a clean exit). Lost workers are recognised by a stale heartbeat. */
export const stopWorker = async (db: Db, id: string): Promise<void> => {
  await db.query(`UPDATE workers SET stopped_at = now(), running = 0, draining = false WHERE id = $1`, [id]);
};

/** Forgets workers that stopped, or stopped heartbeating, more than `olderThanS` ago. */
export const pruneWorkers = async (db: Db, olderThanS = 86_400): Promise<number> => {
  const { rowCount } = await db.query(`DELETE FROM workers WHERE coalesce(stopped_at, heartbeat_at) < now() - $1 * interval '1 second'`, [olderThanS]);
  return rowCount ?? 0;
};
