// The monotonic flow counters behind the Prometheus counters and histograms (docs/observability.md
// "Counters"): the never-pruned totals (sql/flow-totals.ts) plus the minute rollups at or after
// their mark, read in one REPEATABLE READ snapshot, so the mark, the totals and the minutes agree
// (a concurrent absorb moves minutes into the totals atomically: the sum does not change).
import { inOwnTransaction } from "@porter/db/pool";
import type { Db } from "../db";
import { FLOW_LAST_BUCKET } from "../sql/flow-write";

/** Cumulative counts of one (queue, job type) since the totals began. */
export type FlowCounterRow = {
  queueId: string;
  jobType: string;
  succeeded: number;
  dead: number;
  cancelled: number;
  expired: number;
  retried: number;
  leaseExpiries: number;
  /** Claims (the wait histogram's observations) and their summed wait, ms. */
  starts: number;
  waitMsSum: number;
  /** Ended attempts (the run histogram's observations) and their summed run time, ms. */
  runs: number;
  runMsSum: number;
};

/** A queue's cumulative histogram: observations per log2-ms bucket (index = bucket, {@link FLOW_LAST_BUCKET} + 1 entries). */
export type FlowHistogramCounts = { queueId: string; kind: "w" | "r"; buckets: number[] };

export type FlowCounters = {
  byJobType: FlowCounterRow[];
  histograms: FlowHistogramCounts[];
  retriesByCode: Array<{ queueId: string; code: string; n: number }>;
};

/** The minute rows the totals have not absorbed. */
const UNABSORBED = "grain = 1 AND at >= (SELECT absorbed_to FROM flow_totals_mark)";

const COUNTERS_SQL = `SELECT queue_id, job_type,
         sum(succeeded)::text AS succeeded, sum(dead)::text AS dead, sum(cancelled)::text AS cancelled,
         sum(expired)::text AS expired, sum(retried)::text AS retried, sum(lease_expiries)::text AS lease_expiries,
         sum(starts)::text AS starts, sum(wait_ms_sum)::text AS wait_ms_sum, sum(runs)::text AS runs, sum(run_ms_sum)::text AS run_ms_sum
    FROM (SELECT queue_id, job_type, succeeded, dead, cancelled, expired, retried, lease_expiries, starts, wait_ms_sum, runs, run_ms_sum
            FROM flow_totals
          UNION ALL
          SELECT queue_id, job_type, succeeded, dead, cancelled, expired, retried, lease_expiries, starts, wait_ms_sum::numeric, runs, run_ms_sum::numeric
            FROM flow_rollups WHERE ${UNABSORBED}) c
   GROUP BY 1, 2
   ORDER BY 1, 2`;

const HISTOGRAMS_SQL = `SELECT queue_id, kind, bucket, sum(n)::text AS n
    FROM (SELECT queue_id, kind, bucket, n FROM flow_histogram_totals
          UNION ALL
          SELECT queue_id, kind, bucket, n FROM flow_histograms WHERE ${UNABSORBED}) h
   GROUP BY 1, 2, 3
   ORDER BY 1, 2, 3`;

const RETRY_CODES_SQL = `SELECT queue_id, code, sum(n)::text AS n
    FROM (SELECT queue_id, code, n FROM flow_retry_code_totals
          UNION ALL
          SELECT queue_id, code, n FROM flow_retry_codes WHERE ${UNABSORBED}) r
   GROUP BY 1, 2
   ORDER BY 1, 2`;

/**
 * The counters: three aggregates in one READ ONLY REPEATABLE READ transaction under
 * `statement_timeout` (`timeoutMs`, default 2 000) with JIT off. Cost: the totals' rows (queues ×
 * job types, × buckets, × codes; never pruned, never growing with jobs) plus the minute rows since
 * the last absorb (groups × minutes, ~5 + the maintenance interval): never the job tables.
 * Sums are exact (numeric) until the final conversion to a JS number, which keeps their order.
 */
export const readFlowCounters = async (db: Db, params: { timeoutMs?: number } = {}): Promise<FlowCounters> =>
  inOwnTransaction(db, async (tx) => {
    await tx.query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY");
    await tx.query(`SELECT set_config('statement_timeout', $1, true), set_config('jit', 'off', true)`, [
      String(Math.max(1, Math.round(params.timeoutMs ?? 2_000))),
    ]);
    const counters = await tx.query<Record<string, string>>(COUNTERS_SQL);
    const histograms = await tx.query<{ queue_id: string; kind: "w" | "r"; bucket: number; n: string }>(HISTOGRAMS_SQL);
    const codes = await tx.query<{ queue_id: string; code: string; n: string }>(RETRY_CODES_SQL);
    const byKind = new Map<string, FlowHistogramCounts>();
    for (const h of histograms.rows) {
      const key = `${h.queue_id}\u0000${h.kind}`;
      let entry = byKind.get(key);
      if (!entry) {
        entry = { queueId: h.queue_id, kind: h.kind, buckets: new Array<number>(FLOW_LAST_BUCKET + 1).fill(0) };
        byKind.set(key, entry);
      }
      entry.buckets[h.bucket] = Number(h.n);
    }
    return {
      byJobType: counters.rows.map((r) => ({
        queueId: r.queue_id!,
        jobType: r.job_type!,
        succeeded: Number(r.succeeded),
        dead: Number(r.dead),
        cancelled: Number(r.cancelled),
        expired: Number(r.expired),
        retried: Number(r.retried),
        leaseExpiries: Number(r.lease_expiries),
        starts: Number(r.starts),
        waitMsSum: Number(r.wait_ms_sum),
        runs: Number(r.runs),
        runMsSum: Number(r.run_ms_sum),
      })),
      histograms: [...byKind.values()],
      retriesByCode: codes.rows.map((r) => ({ queueId: r.queue_id, code: r.code, n: Number(r.n) })),
    };
  });
