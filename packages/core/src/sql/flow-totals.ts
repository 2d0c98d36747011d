// Never-pruned totals of the flow rollups: what the Prometheus counters and histograms read
// (docs/observability.md "Counters"). Add-only: every minute row before the mark is added once,
// in the transaction that moves the mark, so a counter (totals + the minute rows at or after the
// mark, read in one snapshot) never drops — whatever the hour fold rewrites or pruning deletes.
import { type Db, inOwnTransaction } from "../db";
import { FLOW_COUNTERS } from "./flow-write";

/**
 * Minutes are absorbed once they are this old: a batch stamped in a minute commits within it
 * (the hour fold assumes the same: it redoes an hour for 5 minutes after it ends).
 */
export const FLOW_TOTALS_LATE_MS = 5 * 60_000;

/** Counters of `flow_totals`, summed from the minute rows of `flow_rollups`: every counter of theirs. */
const ROLLUP_SUMS = FLOW_COUNTERS;

/** Each totals table, the minute table it sums, its key (without the tenant; the histograms without the job type) and its sums. */
const TOTALS = [
  { name: "flow_totals", from: "flow_rollups", key: "queue_id, job_type", sums: ROLLUP_SUMS },
  { name: "flow_histogram_totals", from: "flow_histograms", key: "queue_id, kind, bucket", sums: ["n"] },
  { name: "flow_retry_code_totals", from: "flow_retry_codes", key: "queue_id, code", sums: ["n"] },
] as const;

/** Where the mark goes: `now` ($1, default the database's) − the late window ($2 ms), truncated to its minute. */
const TARGET = `date_trunc('minute', coalesce($1::timestamptz, now()) - $2 * interval '1 millisecond')`;

/** `sum(c)`, exact: float8 sums (wait_ms_sum, run_ms_sum) are added as numeric, whose addition does not round. */
const exactSum = (c: string): string => (c.endsWith("_ms_sum") ? `sum(${c}::numeric)` : `sum(${c})`);

/**
 * Adds the minute rows in [mark, `now` − 5 minutes truncated to its minute) to the totals and moves
 * the mark there, in one transaction (the mark row locked FOR UPDATE first: two maintenance passes
 * never add a minute twice). Each statement is an aggregate over a range of the minute tables'
 * primary keys (grain, at): its cost is the groups × minutes since the last pass. Returns the total
 * rows upserted (0: nothing new, or the mark already there).
 */
export const absorbFlowTotals = async (db: Db, params: { now?: Date } = {}): Promise<{ upserted: number }> => {
  // Most passes (every second) find the mark where it should be: one read, no transaction.
  const { rows: check } = await db.query<{ due: boolean }>(`SELECT absorbed_to < ${TARGET} AS due FROM flow_totals_mark`, [
    params.now ?? null,
    FLOW_TOTALS_LATE_MS,
  ]);
  if (!check[0]) throw new Error("flow_totals_mark has no row (migration 20261202001500_flow_totals)");
  if (!check[0].due) return { upserted: 0 };
  return inOwnTransaction(db, async (client) => {
    const { rows } = await client.query<{ due: boolean; to: Date }>(
      `SELECT m.absorbed_to < t."to" AS due, t."to" FROM (SELECT absorbed_to FROM flow_totals_mark FOR UPDATE) m, (SELECT ${TARGET} AS "to") t`,
      [params.now ?? null, FLOW_TOTALS_LATE_MS],
    );
    const range = rows[0];
    if (!range?.due) return { upserted: 0 };
    let upserted = 0;
    for (const t of TOTALS) {
      const { rowCount } = await client.query(
        `INSERT INTO ${t.name} (${t.key}, ${t.sums.join(", ")})
         SELECT ${t.key}, ${t.sums.map(exactSum).join(", ")}
           FROM ${t.from}
          WHERE grain = 1 AND at >= (SELECT absorbed_to FROM flow_totals_mark) AND at < $1
          GROUP BY ${t.key}
          ORDER BY ${t.key}
         ON CONFLICT (${t.key}) DO UPDATE SET ${t.sums.map((c) => `${c} = ${t.name}.${c} + EXCLUDED.${c}`).join(", ")}`,
        [range.to],
      );
      upserted += rowCount ?? 0;
    }
    await client.query("UPDATE flow_totals_mark SET absorbed_to = $1", [range.to]);
    return { upserted };
  });
};

/** The mark: the totals hold every minute row before it. Pruning must leave the minutes at or after it. */
export const flowTotalsMarkSql = "(SELECT absorbed_to FROM flow_totals_mark)";
