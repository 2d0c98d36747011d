// The console's flow charts (docs/observability.md "Console"): the flow rollups and the queue
// samples as a time series at a fixed step. Range scans of the primary keys (grain, at) and
// (at, queue_id) only; never a count over the job tables.
import { allOn, type Db } from "../db";
import { FLOW_LAST_BUCKET } from "../sql/flow-write";
import { histogramQuantile } from "./flow";
import type { Percentiles } from "./signals";

/** The windows of the charts, with their step: minutes up to an hour, 5 minutes for 6 h, hours beyond. */
export const FLOW_SERIES_WINDOWS = {
  "15m": { windowS: 900, stepS: 60 },
  "1h": { windowS: 3_600, stepS: 60 },
  "6h": { windowS: 21_600, stepS: 300 },
  "24h": { windowS: 86_400, stepS: 3_600 },
  "7d": { windowS: 604_800, stepS: 3_600 },
} as const;
export type FlowSeriesWindow = keyof typeof FLOW_SERIES_WINDOWS;

/** Whether `window` names one of {@link FLOW_SERIES_WINDOWS}. */
export const isFlowSeriesWindow = (window: unknown): window is FlowSeriesWindow => typeof window === "string" && Object.hasOwn(FLOW_SERIES_WINDOWS, window);

/** One step of a series: flow counted over the step, latency percentiles of it, gauges sampled in it. */
export type FlowSeriesPoint = {
  /** The step's start. */
  at: Date;
  arrivals: number;
  starts: number;
  succeeded: number;
  dead: number;
  cancelled: number;
  expired: number;
  retried: number;
  throttles: number;
  leaseExpiries: number;
  /** Wait (ready → claim) and run (start → end) percentiles in ms, to within one bucket (×2); null when none. */
  waitMs: Percentiles;
  runMs: Percentiles;
  /**
   * Gauges from the queue samples, the highest sample of the step (over queues: ready and running
   * summed per minute, backlog seconds and oldest age the worst queue's). Null when the step has no
   * sample, or for a tenant or job type scope (samples are per queue).
   */
  ready: number | null;
  running: number | null;
  backlogS: number | null;
  oldestClaimableAgeS: number | null;
};

export type FlowSeries = {
  window: FlowSeriesWindow;
  stepS: number;
  /** First step's start (inclusive) and the end of the last step (exclusive; the last step holds `now`). */
  from: Date;
  to: Date;
  /** False for a tenant or job type scope: the gauges are per queue (all null). */
  hasGauges: boolean;
  points: FlowSeriesPoint[];
};

export type FlowSeriesQuery = { window: FlowSeriesWindow; now?: Date; queueId?: string; tenantId?: string; jobType?: string };

const COUNTERS = ["arrivals", "starts", "succeeded", "dead", "cancelled", "expired", "retried", "throttles", "lease_expiries"] as const;

/**
 * The flow of a scope over a window, one point per step in time order, every step present (zeros
 * where nothing happened). Steps are aligned to the epoch (whole minutes, 5 minutes, hours, UTC);
 * the last one holds `now`. Windows up to 6 hours read minute rows; longer ones the hour rows plus
 * the minute rows after the last hour folded — the same rule as readFlow — so the sum of a series
 * equals readFlow over [from, to).
 */
export const readFlowSeries = async (db: Db, query: FlowSeriesQuery): Promise<FlowSeries> => {
  if (!isFlowSeriesWindow(query.window)) throw new RangeError(`unknown window ${String(query.window)}: one of ${Object.keys(FLOW_SERIES_WINDOWS).join(", ")}`);
  const { windowS, stepS } = FLOW_SERIES_WINDOWS[query.window];
  const stepMs = stepS * 1000;
  const now = query.now ?? new Date();
  const last = Math.floor(now.getTime() / stepMs) * stepMs;
  const count = windowS / stepS;
  const from = new Date(last - (count - 1) * stepMs);
  const to = new Date(last + stepMs);
  const isHourly = windowS > 6 * 3_600;
  const hasGauges = query.tenantId === undefined && query.jobType === undefined;

  // $1 from, $2 to, $3 step seconds, $4 queue, $5 tenant, $6 job type.
  const rows = (table: string) =>
    `(${
      isHourly
        ? `(${table}.grain = 60 AND ${table}.at >= $1 AND ${table}.at < $2)
          OR (${table}.grain = 1 AND ${table}.at >= greatest($1, coalesce((SELECT max(h.at) + interval '1 hour' FROM flow_rollups h WHERE h.grain = 60), $1)) AND ${table}.at < $2)`
        : `${table}.grain = 1 AND ${table}.at >= $1 AND ${table}.at < $2`
    }) AND ($4::text IS NULL OR ${table}.queue_id = $4) AND ($5::text IS NULL OR ${table}.tenant_id = $5) AND ($6::text IS NULL OR ${table}.job_type = $6)`;
  const step = (column: string) => `floor(extract(epoch FROM ${column}) / $3)::bigint * $3`;
  const values = [from, to, stepS, query.queueId ?? null, query.tenantId ?? null, query.jobType ?? null];
  const [sums, hists, samples] = await allOn(db, [
    () =>
      db.query<Record<string, string>>(
        `SELECT ${step("r.at")} AS step, ${COUNTERS.map((c) => `sum(r.${c}) AS ${c}`).join(", ")}
         FROM flow_rollups r WHERE ${rows("r")} GROUP BY 1`,
        values,
      ),
    () =>
      db.query<{ step: string; kind: string; bucket: number; n: string }>(
        `SELECT ${step("r.at")} AS step, r.kind, r.bucket, sum(r.n) AS n FROM flow_histograms r WHERE ${rows("r")} GROUP BY 1, 2, 3`,
        values,
      ),
    () =>
      hasGauges
        ? db.query<{ step: string; ready: number; running: number; backlog_s: number | null; oldest_s: number | null }>(
            `SELECT ${step("m.at")} AS step, max(m.ready)::float8 AS ready, max(m.running)::float8 AS running,
                  max(m.backlog_s) AS backlog_s, max(m.oldest_s) AS oldest_s
             FROM (SELECT s.at, sum(s.ready) AS ready, sum(s.running) AS running, max(s.backlog_s) AS backlog_s,
                          max(s.oldest_claimable_age_s) AS oldest_s
                     FROM queue_samples s
                    WHERE s.at >= $1 AND s.at < $2 AND ($4::text IS NULL OR s.queue_id = $4)
                    GROUP BY s.at) m
            GROUP BY 1`,
            values.slice(0, 4),
          )
        : Promise.resolve({ rows: [] }),
  ]);

  const bySteps = new Map<number, { sums?: Record<string, string>; wait: number[]; run: number[]; sample?: (typeof samples.rows)[number] }>();
  const at = (stepSeconds: string) => {
    const key = Number(stepSeconds) * 1000;
    let found = bySteps.get(key);
    if (!found) {
      found = { wait: new Array(FLOW_LAST_BUCKET + 1).fill(0), run: new Array(FLOW_LAST_BUCKET + 1).fill(0) };
      bySteps.set(key, found);
    }
    return found;
  };
  for (const r of sums.rows) at(r.step!).sums = r;
  for (const r of hists.rows) (r.kind === "w" ? at(r.step).wait : at(r.step).run)[r.bucket]! += Number(r.n);
  for (const r of samples.rows) at(r.step).sample = r;

  const points: FlowSeriesPoint[] = [];
  for (let i = 0; i < count; i++) {
    const t = from.getTime() + i * stepMs;
    const s = bySteps.get(t);
    const n = (c: (typeof COUNTERS)[number]) => Number(s?.sums?.[c] ?? 0);
    const sample = s?.sample;
    points.push({
      at: new Date(t),
      arrivals: n("arrivals"),
      starts: n("starts"),
      succeeded: n("succeeded"),
      dead: n("dead"),
      cancelled: n("cancelled"),
      expired: n("expired"),
      retried: n("retried"),
      throttles: n("throttles"),
      leaseExpiries: n("lease_expiries"),
      waitMs: percentiles(s?.wait),
      runMs: percentiles(s?.run),
      ready: sample ? Number(sample.ready) : null,
      running: sample ? Number(sample.running) : null,
      backlogS: sample?.backlog_s ?? null,
      oldestClaimableAgeS: sample?.oldest_s ?? null,
    });
  }
  return { window: query.window, stepS, from, to, hasGauges, points };
};

const percentiles = (histogram: number[] | undefined): Percentiles =>
  histogram
    ? {
        p50: histogramQuantile(histogram, 0.5)?.ms ?? null,
        p95: histogramQuantile(histogram, 0.95)?.ms ?? null,
        p99: histogramQuantile(histogram, 0.99)?.ms ?? null,
      }
    : { p50: null, p95: null, p99: null };
