// The read side of the flow rollups (docs/observability.md "Rollups"): sums over shards and a
// window, per (queue, job type, tenant). Never a count over the job tables.
import { allOn, type Db } from "../db";
import { FLOW_LAST_BUCKET } from "../sql/flow-write";

/** Flow over a window for one (queue, job type, tenant), or a sum of several. */
export type FlowTotals = {
  arrivals: number;
  starts: number;
  succeeded: number;
  retried: number;
  dead: number;
  cancelled: number;
  expired: number;
  leaseExpiries: number;
  throttles: number;
  waitMsSum: number;
  runs: number;
  runMsSum: number;
  /** Counts per bucket (index = bucket: 0 is < 1 ms, k is [2^(k-1), 2^k) ms, 28 is ≥ 2^27 ms). */
  waitHistogram: number[];
  runHistogram: number[];
  /** Retries (failed → RETRY_WAIT) by error code. */
  retriesByCode: Record<string, number>;
};

export type FlowRow = FlowTotals & { queueId: string; jobType: string; tenantId: string };

/** An empty {@link FlowTotals}. */
export const emptyFlow = (): FlowTotals => ({
  arrivals: 0,
  starts: 0,
  succeeded: 0,
  retried: 0,
  dead: 0,
  cancelled: 0,
  expired: 0,
  leaseExpiries: 0,
  throttles: 0,
  waitMsSum: 0,
  runs: 0,
  runMsSum: 0,
  waitHistogram: new Array(FLOW_LAST_BUCKET + 1).fill(0),
  runHistogram: new Array(FLOW_LAST_BUCKET + 1).fill(0),
  retriesByCode: {},
});

/** Adds `b` into `a` (returns `a`). */
export const addFlow = (a: FlowTotals, b: FlowTotals): FlowTotals => {
  for (const k of [
    "arrivals",
    "starts",
    "succeeded",
    "retried",
    "dead",
    "cancelled",
    "expired",
    "leaseExpiries",
    "throttles",
    "waitMsSum",
    "runs",
    "runMsSum",
  ] as const)
    a[k] += b[k];
  for (let i = 0; i <= FLOW_LAST_BUCKET; i++) {
    a.waitHistogram[i]! += b.waitHistogram[i]!;
    a.runHistogram[i]! += b.runHistogram[i]!;
  }
  for (const [code, n] of Object.entries(b.retriesByCode)) a.retriesByCode[code] = (a.retriesByCode[code] ?? 0) + n;
  return a;
};

/** The upper bound of a bucket in milliseconds (bucket 0: 1 ms; the last: infinity). */
export const bucketUpperMs = (bucket: number): number => (bucket >= FLOW_LAST_BUCKET ? Number.POSITIVE_INFINITY : 2 ** bucket);

/** The bucket of a duration in milliseconds, as the SQL writers compute it (flow-write.ts bucketSql). */
export const bucketOf = (ms: number): number => (ms < 1 ? 0 : Math.min(FLOW_LAST_BUCKET, Math.floor(Math.log2(ms)) + 1));

/**
 * The q-quantile (0 < q ≤ 1) of a histogram: the bucket holding the observation of rank ⌈q·n⌉,
 * reported as the bucket's upper bound in ms (the last, open bucket: its lower bound). Null for
 * an empty histogram. Exact to within one bucket (a factor of 2).
 */
export const histogramQuantile = (histogram: readonly number[], q: number): { ms: number; bucket: number } | null => {
  const total = histogram.reduce((s, n) => s + n, 0);
  if (total === 0) return null;
  const rank = Math.max(1, Math.ceil(q * total));
  let seen = 0;
  for (let b = 0; b < histogram.length; b++) {
    seen += histogram[b]!;
    if (seen >= rank) return { ms: b >= FLOW_LAST_BUCKET ? 2 ** (FLOW_LAST_BUCKET - 1) : bucketUpperMs(b), bucket: b };
  }
  return null;
};

export type FlowQuery = {
  /** Window start (inclusive) and end (exclusive). */
  from: Date;
  to: Date;
  queueId?: string;
  tenantId?: string;
  jobType?: string;
};

/**
 * Flow per (queue, job type, tenant) over a window: windows up to 6 hours read minute rows, longer
 * ones the hour rows (from the hour holding `from`) plus the minutes after the last hour folded.
 * Every row is a range scan of the primary key (grain, at).
 */
export const readFlow = async (db: Db, query: FlowQuery): Promise<FlowRow[]> => {
  const isHourly = query.to.getTime() - query.from.getTime() > 6 * 3_600_000;
  const where = `(${
    isHourly
      ? `(grain = 60 AND at >= date_trunc('hour', $1::timestamptz) AND at < $2)
          OR (grain = 1 AND at >= coalesce((SELECT max(at) + interval '1 hour' FROM flow_rollups WHERE grain = 60), $1) AND at < $2)`
      : "grain = 1 AND at >= date_trunc('minute', $1::timestamptz) AND at < $2"
  }) AND ($3::text IS NULL OR queue_id = $3) AND ($4::text IS NULL OR tenant_id = $4) AND ($5::text IS NULL OR job_type = $5)`;
  const values = [query.from, query.to, query.queueId ?? null, query.tenantId ?? null, query.jobType ?? null];
  const [sums, hists, codes] = await allOn(db, [
    () =>
      db.query<Record<string, string>>(
        `SELECT queue_id, job_type, tenant_id, sum(arrivals) AS arrivals, sum(starts) AS starts, sum(succeeded) AS succeeded,
              sum(retried) AS retried, sum(dead) AS dead, sum(cancelled) AS cancelled, sum(expired) AS expired,
              sum(lease_expiries) AS lease_expiries, sum(throttles) AS throttles, sum(wait_ms_sum) AS wait_ms_sum,
              sum(runs) AS runs, sum(run_ms_sum) AS run_ms_sum
         FROM flow_rollups WHERE ${where} GROUP BY 1, 2, 3`,
        values,
      ),
    () =>
      db.query<{ queue_id: string; job_type: string; tenant_id: string; kind: string; bucket: number; n: string }>(
        `SELECT queue_id, job_type, tenant_id, kind, bucket, sum(n) AS n FROM flow_histograms WHERE ${where.replaceAll("flow_rollups", "flow_histograms")} GROUP BY 1, 2, 3, 4, 5`,
        values,
      ),
    () =>
      db.query<{ queue_id: string; job_type: string; tenant_id: string; code: string; n: string }>(
        `SELECT queue_id, job_type, tenant_id, code, sum(n) AS n FROM flow_retry_codes WHERE ${where.replaceAll("flow_rollups", "flow_retry_codes")} GROUP BY 1, 2, 3, 4`,
        values,
      ),
  ]);
  const rows = new Map<string, FlowRow>();
  const row = (r: { queue_id: string; job_type: string; tenant_id: string }): FlowRow => {
    const key = `${r.queue_id}\u0000${r.job_type}\u0000${r.tenant_id}`;
    let found = rows.get(key);
    if (!found) {
      found = { ...emptyFlow(), queueId: r.queue_id, jobType: r.job_type, tenantId: r.tenant_id };
      rows.set(key, found);
    }
    return found;
  };
  for (const r of sums.rows) {
    const f = row(r as { queue_id: string; job_type: string; tenant_id: string });
    f.arrivals += Number(r.arrivals);
    f.starts += Number(r.starts);
    f.succeeded += Number(r.succeeded);
    f.retried += Number(r.retried);
    f.dead += Number(r.dead);
    f.cancelled += Number(r.cancelled);
    f.expired += Number(r.expired);
    f.leaseExpiries += Number(r.lease_expiries);
    f.throttles += Number(r.throttles);
    f.waitMsSum += Number(r.wait_ms_sum);
    f.runs += Number(r.runs);
    f.runMsSum += Number(r.run_ms_sum);
  }
  for (const r of hists.rows) (r.kind === "w" ? row(r).waitHistogram : row(r).runHistogram)[r.bucket]! += Number(r.n);
  for (const r of codes.rows) {
    const f = row(r);
    f.retriesByCode[r.code] = (f.retriesByCode[r.code] ?? 0) + Number(r.n);
  }
  return [...rows.values()].sort((a, b) => a.queueId.localeCompare(b.queueId) || a.jobType.localeCompare(b.jobType) || a.tenantId.localeCompare(b.tenantId));
};
