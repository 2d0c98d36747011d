import type { ReadReplica, ReplicaState } from "@porter/db/read-replica";
import type pg from "pg";

/** The read replica in a health report: serving reads (`up`), or not (`lagging`, `down`: reads go to the primary). */
export type ReplicaHealth = { state: ReplicaState; lag_s: number | null };

/**
 * What `/api/health` and `system.health` report. `replica` only when one is configured; it never
 * makes the status an error (its reads fall back to the primary).
 */
export type HealthReport = ({ status: "ok"; database: "up" } | { status: "error"; database: "down" }) & { replica?: ReplicaHealth };

/**
 * Process up and `select 1` answered within `timeoutMs` (default 2 s). Never throws: a database
 * that is down, or too slow to answer, is `database: "down"`. With `replica`, its last probe
 * (at most a second old).
 */
export const checkHealth = async (pool: pg.Pool, options: { timeoutMs?: number; replica?: ReadReplica | undefined } = {}): Promise<HealthReport> => {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error("health check timed out")), options.timeoutMs ?? 2000);
  });
  const replica = options.replica
    ? options.replica.status().then((s): ReplicaHealth => ({ state: s.state, lag_s: s.lagS === null ? null : Math.round(s.lagS * 1000) / 1000 }))
    : undefined;
  try {
    await Promise.race([pool.query("select 1"), timeout]);
    return { status: "ok", database: "up", ...(replica ? { replica: await replica } : {}) };
  } catch {
    return { status: "error", database: "down", ...(replica ? { replica: await replica } : {}) };
  } finally {
    clearTimeout(timer);
  }
};
