import type { Db } from "../db";

/** What a worker reads of its pool (lane) when it starts. */
export type PoolSettings = { workerConcurrency: number };

/**
 * The settings a worker of pool `poolId` starts with (its default slots, `worker_concurrency`),
 * or undefined for an unknown pool. Read once per worker start, by primary key.
 */
export const readPoolSettings = async (db: Db, poolId: string): Promise<PoolSettings | undefined> => {
  const { rows } = await db.query<{ worker_concurrency: number }>(`SELECT worker_concurrency FROM pools WHERE id = $1`, [poolId]);
  const row = rows[0];
  return row ? { workerConcurrency: row.worker_concurrency } : undefined;
};
