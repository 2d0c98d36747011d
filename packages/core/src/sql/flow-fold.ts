import { type Db, inOwnTransaction } from "../db";
import { absorbFlowTotals, flowTotalsMarkSql } from "./flow-totals";
import { FLOW_COUNTERS } from "./flow-write";

/** Minute rollups are kept this long (docs/observability.md "Rollups"). */
export const FLOW_MINUTE_RETENTION_MS = 14 * 24 * 3_600_000;
/** Hour rollups are kept this long. */
export const FLOW_HOUR_RETENTION_MS = 90 * 24 * 3_600_000;
/** At most this many hours folded per pass (a database that was down catches up over passes). */
const MAX_HOURS_PER_PASS = 48;
/** How long after an hour ends its fold is redone (a batch stamped in its last minute commits later). */
const LATE_MS = 5 * 60_000;

const TABLES = [
  {
    name: "flow_rollups",
    key: "queue_id, job_type, tenant_id",
    sums: FLOW_COUNTERS.join(", "),
  },
  { name: "flow_histograms", key: "queue_id, job_type, tenant_id, kind, bucket", sums: "n" },
  { name: "flow_retry_codes", key: "queue_id, job_type, tenant_id, code", sums: "n" },
] as const;

/**
 * Folds the minute rollups of completed hours into hour rows (grain 60, shard 0), idempotently:
 * per pass, from the last hour folded while its late batches may still commit (5 minutes after it
 * ended; a batch that began in its last minute may have committed after that fold), else from the
 * first hour after it that has minute rows (an idle gap is skipped, and an hour is never redone
 * once its minutes may be pruned), up to the hour before `now`, at most 48, deleted and re-inserted
 * from the minutes in one transaction. The minutes stay (14 days), so a fold can always be redone.
 * The bounds come from the primary keys (grain, at): index probes. Returns the hours folded.
 * First the counters' totals take the minutes past the late window (flow-totals.ts, own transaction).
 */
export const foldFlowHours = async (db: Db, params: { now?: Date } = {}): Promise<{ hours: number }> => {
  await absorbFlowTotals(db, params);
  const { rows } = await db.query<{ from: Date | null; to: Date }>(
    `WITH n AS (SELECT coalesce($1::timestamptz, now()) AS now, (SELECT max(at) FROM flow_rollups WHERE grain = 60) AS last),
     b AS (
       SELECT CASE
                WHEN n.last IS NULL THEN (SELECT date_trunc('hour', min(at)) FROM flow_rollups WHERE grain = 1)
                WHEN n.now - (n.last + interval '1 hour') <= $3 * interval '1 millisecond' THEN n.last
                ELSE (SELECT date_trunc('hour', min(at)) FROM flow_rollups WHERE grain = 1 AND at >= n.last + interval '1 hour')
              END AS "from",
              date_trunc('hour', n.now) AS "to"
         FROM n
     )
     SELECT "from", least("to", "from" + $2 * interval '1 hour') AS "to" FROM b`,
    [params.now ?? null, MAX_HOURS_PER_PASS, LATE_MS],
  );
  const range = rows[0];
  if (!range?.from || range.from >= range.to) return { hours: 0 };
  const { from, to } = range;
  await inOwnTransaction(db, async (client) => {
    for (const t of TABLES) {
      await client.query(`DELETE FROM ${t.name} WHERE grain = 60 AND at >= $1 AND at < $2`, [from, to]);
      const sums = t.sums.split(", ").map((c) => `sum(${c})`);
      await client.query(
        `INSERT INTO ${t.name} (grain, at, shard, ${t.key}, ${t.sums})
         SELECT 60, date_trunc('hour', at), 0, ${t.key}, ${sums.join(", ")}
           FROM ${t.name}
          WHERE grain = 1 AND at >= $1 AND at < $2
          GROUP BY date_trunc('hour', at), ${t.key}`,
        [from, to],
      );
    }
  });
  return { hours: Math.round((to.getTime() - from.getTime()) / 3_600_000) };
};

/**
 * Retention: minute rows past 14 days and hour rows past 90 days, deleted in batches from the old
 * end of the primary key (grain, at): each batch is a range scan of the index, no table scan.
 * Minutes the counters' totals have not absorbed yet stay (flow-totals.ts).
 */
export const pruneFlow = async (db: Db, params: { now?: Date; batch?: number } = {}): Promise<{ pruned: number }> => {
  const batch = params.batch ?? 10_000;
  const now = params.now ?? new Date();
  let pruned = 0;
  for (const t of TABLES) {
    for (const [grain, keepMs] of [
      [1, FLOW_MINUTE_RETENTION_MS],
      [60, FLOW_HOUR_RETENTION_MS],
    ] as const) {
      for (;;) {
        const { rowCount } = await db.query(
          `DELETE FROM ${t.name} WHERE ctid = ANY (ARRAY(SELECT ctid FROM ${t.name} WHERE grain = $1 AND at < $2 AND (grain = 60 OR at < ${flowTotalsMarkSql}) LIMIT $3))`,
          [grain, new Date(now.getTime() - keepMs), batch],
        );
        pruned += rowCount ?? 0;
        if ((rowCount ?? 0) < batch) break;
      }
    }
  }
  return { pruned };
};
