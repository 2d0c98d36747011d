import { type FlowCounters, readFlowCounters, readSignals, type Signals } from "@porter/core";
import { FLOW_LAST_BUCKET } from "@porter/core/sql/flow-write";
import type { HistogramSample, MetricDef, Sample, ScrapeContext } from "./console-metrics";

// The rollup-backed metrics (docs/observability.md "Metrics"): counters and histograms from the
// monotonic flow totals (core reads/flow-counters.ts), gauges from the signals (core
// reads/signals.ts, their one home). Both reads are cached across scrapes (5 s, as porter_jobs).

const counters = (ctx: ScrapeContext): Promise<FlowCounters> => ctx.cached("flowCounters", () => readFlowCounters(ctx.db));
const signals = (ctx: ScrapeContext): Promise<Signals> => ctx.cached("signals", () => readSignals(ctx.db));

const OUTCOMES = ["succeeded", "dead", "cancelled", "expired"] as const;

/** Upper bounds (seconds) of the rollups' log2-ms buckets 0..27: bucket k holds [2^(k-1), 2^k) ms; bucket 28 (≥ 2^27 ms) only +Inf. */
export const FLOW_BUCKET_BOUNDS_S: readonly number[] = Array.from({ length: FLOW_LAST_BUCKET }, (_, k) => 2 ** k / 1000);

/** The queues' histograms of one kind as precomputed Prometheus samples (cumulative buckets). */
const histogram = (c: FlowCounters, kind: "w" | "r"): HistogramSample[] => {
  const sums = new Map<string, number>();
  for (const r of c.byJobType) sums.set(r.queueId, (sums.get(r.queueId) ?? 0) + (kind === "w" ? r.waitMsSum : r.runMsSum));
  return c.histograms
    .filter((h) => h.kind === kind)
    .map((h) => {
      let cumulative = 0;
      const buckets = FLOW_BUCKET_BOUNDS_S.map((le, k) => {
        cumulative += h.buckets[k] ?? 0;
        return { le, count: cumulative };
      });
      const count = cumulative + (h.buckets[FLOW_LAST_BUCKET] ?? 0);
      return { labels: { queue: h.queueId }, buckets, sum: (sums.get(h.queueId) ?? 0) / 1000, count };
    });
};

const byQueue = (rows: FlowCounters["byJobType"], value: (r: FlowCounters["byJobType"][number]) => number): Sample[] => {
  const sums = new Map<string, number>();
  for (const r of rows) sums.set(r.queueId, (sums.get(r.queueId) ?? 0) + value(r));
  return [...sums].map(([queue, n]) => ({ labels: { queue }, value: n }));
};

/** The rollup-backed metrics, appended to the console's list. */
export const FLOW_METRICS: readonly MetricDef[] = [
  {
    name: "porter_jobs_completed_total",
    help: "Jobs that reached a terminal outcome (succeeded, dead, cancelled, expired), from the flow rollups' never-pruned totals.",
    labelNames: ["queue", "job_type", "outcome"],
    type: "counter",
    read: async (ctx) =>
      (await counters(ctx)).byJobType.flatMap((r) =>
        OUTCOMES.map((outcome) => ({ labels: { queue: r.queueId, job_type: r.jobType, outcome }, value: r[outcome] })),
      ),
  },
  {
    name: "porter_job_retries_total",
    help: "Failed attempts scheduled for a retry, by the structured error's code (UNKNOWN without one).",
    labelNames: ["queue", "code"],
    type: "counter",
    read: async (ctx) => (await counters(ctx)).retriesByCode.map((r) => ({ labels: { queue: r.queueId, code: r.code }, value: r.n })),
  },
  {
    name: "porter_lease_expiries_total",
    help: "Attempts whose lease expired (rescued by maintenance).",
    labelNames: ["queue"],
    type: "counter",
    read: async (ctx) => byQueue((await counters(ctx)).byJobType, (r) => r.leaseExpiries),
  },
  {
    name: "porter_job_wait_seconds",
    help: "Wait from claimable (ready, or a retry's time) to claimed, seconds; buckets are the rollups' log2-ms buckets.",
    labelNames: ["queue"],
    type: "histogram",
    read: async (ctx) => histogram(await counters(ctx), "w"),
  },
  {
    name: "porter_job_run_seconds",
    help: "Run time of an attempt, start to end (ack, failure or lease expiry), seconds; log2-ms buckets.",
    labelNames: ["queue"],
    type: "histogram",
    read: async (ctx) => histogram(await counters(ctx), "r"),
  },
  {
    name: "porter_backlog_seconds",
    help: "Ready jobs × mean run time ÷ effective concurrency (the signals' backlog, 15-minute window); absent when unknown (no run time, or no concurrency).",
    labelNames: ["queue"],
    read: async (ctx) => (await signals(ctx)).queues.flatMap((q) => (q.backlogS === null ? [] : [{ labels: { queue: q.queueId }, value: q.backlogS }])),
  },
  {
    name: "porter_pool_desired_workers",
    help: "Workers the pool should run to meet its queues' wait targets (or keep up with arrivals), fewer when throttled: the autoscaling signal.",
    labelNames: ["pool"],
    read: async (ctx) => (await signals(ctx)).pools.map((p) => ({ labels: { pool: p.poolId }, value: p.desiredWorkers })),
  },
];
