import type pg from "pg";

/** What `/api/health` and `system.health` report. */
export type HealthReport = { status: "ok"; database: "up" } | { status: "error"; database: "down" };

/**
 * Process up and `select 1` answered within `timeoutMs` (default 2 s). Never throws: a database
 * that is down, or too slow to answer, is `database: "down"`.
 */
export const checkHealth = async (pool: pg.Pool, options: { timeoutMs?: number } = {}): Promise<HealthReport> => {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error("health check timed out")), options.timeoutMs ?? 2000);
  });
  try {
    await Promise.race([pool.query("select 1"), timeout]);
    return { status: "ok", database: "up" };
  } catch {
    return { status: "error", database: "down" };
  } finally {
    clearTimeout(timer);
  }
};
