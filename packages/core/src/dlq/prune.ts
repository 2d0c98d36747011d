import type { Db } from "../db";

/** How long the sparkline's hourly counts and the death rows are kept. */
export const DLQ_HOURS_RETENTION_MS = 8 * 24 * 3600_000;
export const DLQ_DEATHS_RETENTION_MS = 14 * 24 * 3600_000;

/**
 * Prunes the failure groups' history: hourly counts older than 8 days (the sparkline shows 24 h)
 * and death rows older than 14 days (alert windows and the "all deaths" view are shorter). Batched
 * like the retention of finished jobs: each statement deletes at most `batch` rows picked by ctid
 * (dlq_deaths along its died_at index, oldest first), and at most `maxBatches` statements run per
 * call, so one maintenance pass never holds long locks; the next pass continues. The groups
 * themselves stay (their counts are the history).
 */
export const pruneDlq = async (db: Db, params: { now?: Date; batch?: number; maxBatches?: number } = {}): Promise<{ hours: number; deaths: number }> => {
  const now = params.now ?? new Date();
  const batch = params.batch ?? 5000;
  const maxBatches = params.maxBatches ?? 10;
  const run = async (sql: string, cutoff: Date): Promise<number> => {
    let total = 0;
    for (let i = 0; i < maxBatches; i++) {
      const { rowCount } = await db.query(sql, [cutoff, batch]);
      total += rowCount ?? 0;
      if ((rowCount ?? 0) < batch) break;
    }
    return total;
  };
  const hours = await run(
    `DELETE FROM dlq_group_hours WHERE ctid = ANY(ARRAY(SELECT ctid FROM dlq_group_hours WHERE hour < $1 LIMIT $2))`,
    new Date(now.getTime() - DLQ_HOURS_RETENTION_MS),
  );
  const deaths = await run(
    `DELETE FROM dlq_deaths WHERE ctid = ANY(ARRAY(SELECT ctid FROM dlq_deaths WHERE died_at < $1 ORDER BY died_at LIMIT $2))`,
    new Date(now.getTime() - DLQ_DEATHS_RETENTION_MS),
  );
  return { hours, deaths };
};
