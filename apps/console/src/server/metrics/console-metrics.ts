import { type Db, deadByQueue, type LiveJobCount, liveJobCounts, oldestReady, workersByState } from "@porter/core";
import type { ReadReplica } from "@porter/db/read-replica";
import { Counter, collectDefaultMetrics, Gauge, Registry } from "prom-client";
import { tenantLabeller } from "../../lib/tenant-labels";
import { FLOW_METRICS } from "./flow-metrics";

/** Settings of the console's registry (env: PORTER_METRICS_TOP_TENANTS). */
export type ConsoleMetricsOptions = {
  db: Db;
  /** Tenants labelled by id (by live volume); the rest are `other`. */
  topTenants: number;
  /** How long the live job counts, the rollup counters and the signals are reused across scrapes. Default 5 000 ms. */
  liveCacheMs?: number;
  /** statement_timeout of the live job counts. Default 2 000 ms. */
  liveTimeoutMs?: number;
  /** The read replica, if any: its state and lag as gauges. */
  replica?: ReadReplica | undefined;
  /** Where a failed read is reported (the scrape carries on: porter_up 0, that metric absent). */
  onReadError?: (metric: string, error: Error) => void;
};

/** One series: its labels and value. */
export type Sample = { labels: Record<string, string>; value: number };

/** One histogram series, precomputed: cumulative counts per upper bound `le` (seconds, ascending, without +Inf), the sum and the count. */
export type HistogramSample = { labels: Record<string, string>; buckets: Array<{ le: number; count: number }>; sum: number; count: number };

/** What every read of one scrape can see: the database and the cached live counts. */
export type ScrapeContext = {
  db: Db;
  /** Live job counts per (queue, tenant, state), cached across scrapes. */
  liveCounts: () => Promise<LiveJobCount[]>;
  /** Runs `read` once per scrape for all metrics that share it (by `key`). */
  once: <T>(key: string, read: () => Promise<T>) => Promise<T>;
  /** Runs `read` once per `liveCacheMs` across scrapes (by `key`); a failed read is not kept. */
  cached: <T>(key: string, read: () => Promise<T>) => Promise<T>;
  topTenants: number;
};

/**
 * One metric of the console: a prom-client gauge (or counter) and `read`, the one cheap query it
 * needs, returning its samples. Adding a metric is adding one of these to {@link CONSOLE_METRICS}
 * (a counter built from rollup totals is a read of the monotonic totals with `type: "counter"`).
 */
export type MetricDef =
  | {
      name: string;
      help: string;
      labelNames: readonly string[];
      type?: "gauge" | "counter";
      read: (ctx: ScrapeContext) => Promise<Sample[]>;
    }
  | {
      name: string;
      help: string;
      labelNames: readonly string[];
      /** Precomputed buckets (rollup histograms): exposed by a prom-client metric object whose get() returns them. */
      type: "histogram";
      read: (ctx: ScrapeContext) => Promise<HistogramSample[]>;
    };

/** One value of a prom-client metric object's get() (prom-client's own type is not exported). */
type MetricValue = { metricName: string; labels: Record<string, string | number>; value: number };

/** The exposition values of precomputed histogram samples (`_bucket` per bound and +Inf, `_sum`, `_count`). */
const histogramValues = (name: string, samples: HistogramSample[]): MetricValue[] =>
  samples.flatMap((s) => [
    ...s.buckets.map((b) => ({ metricName: `${name}_bucket`, labels: { ...s.labels, le: b.le }, value: b.count })),
    { metricName: `${name}_bucket`, labels: { ...s.labels, le: "+Inf" }, value: s.count },
    { metricName: `${name}_sum`, labels: s.labels, value: s.sum },
    { metricName: `${name}_count`, labels: s.labels, value: s.count },
  ]);

const queueState = (counts: LiveJobCount[]): Sample[] => {
  const byKey = new Map<string, Sample>();
  for (const c of counts) {
    const key = `${c.queue_id}\u0000${c.state}`;
    const sample = byKey.get(key) ?? { labels: { queue: c.queue_id, state: c.state }, value: 0 };
    sample.value += c.count;
    byKey.set(key, sample);
  }
  return [...byKey.values()];
};

const tenantState = (counts: LiveJobCount[], topTenants: number): Sample[] => {
  const volume = new Map<string, number>();
  for (const c of counts) volume.set(c.tenant_id, (volume.get(c.tenant_id) ?? 0) + c.count);
  const label = tenantLabeller(volume, topTenants);
  const byKey = new Map<string, Sample>();
  for (const c of counts) {
    const tenant = label(c.tenant_id);
    const key = `${tenant}\u0000${c.state}`;
    const sample = byKey.get(key) ?? { labels: { tenant, state: c.state }, value: 0 };
    sample.value += c.count;
    byKey.set(key, sample);
  }
  return [...byKey.values()];
};

/** The console's metrics besides porter_up and the process metrics; docs/observability.md lists them. */
export const CONSOLE_METRICS: readonly MetricDef[] = [
  {
    name: "porter_jobs",
    help: "Live jobs (READY, RUNNING, RETRY_WAIT) by queue and state; finished jobs are counted by the rollups.",
    labelNames: ["queue", "state"],
    read: async (ctx) => queueState(await ctx.liveCounts()),
  },
  {
    name: "porter_tenant_jobs",
    help: 'Live jobs by tenant and state: the top PORTER_METRICS_TOP_TENANTS tenants by live jobs, the rest as tenant="other".',
    labelNames: ["tenant", "state"],
    read: async (ctx) => tenantState(await ctx.liveCounts(), ctx.topTenants),
  },
  {
    name: "porter_oldest_ready_seconds",
    help: "Seconds the oldest claimable job of the queue has waited since it became claimable (0 when none).",
    labelNames: ["queue"],
    read: async (ctx) => (await oldestReady(ctx.db)).map((r) => ({ labels: { queue: r.queue_id }, value: r.oldest_s ?? 0 })),
  },
  {
    name: "porter_dead_jobs",
    help: "Jobs of the queue in the dead-letter queue now (DEAD, not redriven or pruned).",
    labelNames: ["queue"],
    read: async (ctx) => (await ctx.once("deadByQueue", () => deadByQueue(ctx.db))).map((r) => ({ labels: { queue: r.queue_id }, value: r.dead })),
  },
  {
    name: "porter_dead_unowned_oldest_seconds",
    help: "Age of the oldest dead job of the queue in a failure group nobody owns and nobody resolved or ignored (0 when none).",
    labelNames: ["queue"],
    read: async (ctx) =>
      (await ctx.once("deadByQueue", () => deadByQueue(ctx.db))).map((r) => ({ labels: { queue: r.queue_id }, value: r.unowned_oldest_s ?? 0 })),
  },
  {
    name: "porter_workers",
    help: "Worker processes not cleanly stopped, by pool and state (live, draining, lost).",
    labelNames: ["pool", "state"],
    read: async (ctx) => (await workersByState(ctx.db)).map((r) => ({ labels: { pool: r.pool_id, state: r.state }, value: r.count })),
  },
  ...FLOW_METRICS,
];

/**
 * The console's Prometheus registry (its own, never prom-client's global default). A scrape first
 * runs every metric's read in parallel (`refresh`), then renders: each metric's `collect()` only
 * copies the samples read, so porter_up can say whether all reads succeeded. The live job counts
 * (the one read that grows with the backlog) are cached for `liveCacheMs` and shared by concurrent
 * scrapes, so scrapes never pile up on the database.
 */
export class ConsoleMetrics {
  readonly registry = new Registry();
  private readonly samples = new Map<string, Sample[] | HistogramSample[]>();
  private readonly cache = new Map<string, { at: number; value: Promise<unknown> }>();
  private isUp = false;
  private live: { at: number; value: Promise<LiveJobCount[]> } | undefined;
  private inFlight: Promise<void> | undefined;

  constructor(
    private readonly options: ConsoleMetricsOptions,
    private readonly defs: readonly MetricDef[] = CONSOLE_METRICS,
  ) {
    collectDefaultMetrics({ register: this.registry, prefix: "porter_console_" });
    const registers = [this.registry];
    const self = this;
    new Gauge({
      name: "porter_up",
      help: "Whether the console could read the database for this scrape (1: every read answered).",
      registers,
      collect() {
        this.set(self.isUp ? 1 : 0);
      },
    });
    const replica = options.replica;
    if (replica) {
      // The read replica (docs/scaling.md "Replica reads"): its last probe, at most a second old.
      new Gauge({
        name: "porter_read_replica_up",
        help: "Whether the read replica serves the console's heavy reads (1), or they go to the primary (0: down or lagging beyond PORTER_READ_MAX_LAG_S).",
        registers,
        async collect() {
          this.set((await replica.status()).state === "up" ? 1 : 0);
        },
      });
      new Gauge({
        name: "porter_read_replica_lag_seconds",
        help: "How far the read replica's replay is behind the primary, in seconds (0: caught up; NaN: unknown, the replica down).",
        registers,
        async collect() {
          this.set((await replica.status()).lagS ?? Number.NaN);
        },
      });
    }
    for (const def of defs) {
      const config = { name: def.name, help: def.help, labelNames: [...def.labelNames], registers };
      const samples = () => (self.samples.get(def.name) ?? []) as Sample[];
      if (def.type === "histogram") {
        // prom-client's Histogram observes values; these buckets are counted by the database, so
        // a metric object whose get() returns them (the registry renders it like any histogram).
        const { name, help } = def;
        this.registry.registerMetric({
          name,
          help,
          type: "histogram",
          get: async () => ({
            name,
            help,
            type: "histogram",
            aggregator: "sum",
            values: histogramValues(name, (self.samples.get(name) ?? []) as HistogramSample[]),
          }),
        } as unknown as Parameters<Registry["registerMetric"]>[0]);
      } else if (def.type === "counter") {
        // A total the database keeps (a rollup): the counter is set to it at each scrape.
        new Counter({
          ...config,
          collect() {
            this.reset();
            for (const s of samples()) this.inc(s.labels, s.value);
          },
        });
      } else {
        new Gauge({
          ...config,
          collect() {
            this.reset();
            for (const s of samples()) this.set(s.labels, s.value);
          },
        });
      }
    }
  }

  /** The live job counts, cached for `liveCacheMs`; a failed read is not cached. */
  private liveCounts = (): Promise<LiveJobCount[]> => {
    const now = Date.now();
    if (this.live && now - this.live.at < (this.options.liveCacheMs ?? 5_000)) return this.live.value;
    const value = liveJobCounts(this.options.db, { timeoutMs: this.options.liveTimeoutMs ?? 2_000 });
    this.live = { at: now, value };
    value.catch(() => {
      if (this.live?.value === value) this.live = undefined;
    });
    return value;
  };

  /** `read`'s result, reused for `liveCacheMs` (by `key`); a failed read is not cached. */
  private cached = <T>(key: string, read: () => Promise<T>): Promise<T> => {
    const now = Date.now();
    const hit = this.cache.get(key);
    if (hit && now - hit.at < (this.options.liveCacheMs ?? 5_000)) return hit.value as Promise<T>;
    const value = read();
    this.cache.set(key, { at: now, value });
    value.catch(() => {
      if (this.cache.get(key)?.value === value) this.cache.delete(key);
    });
    return value;
  };

  /** Runs every read once (concurrent scrapes share one refresh). */
  refresh(): Promise<void> {
    this.inFlight ??= this.runRefresh().finally(() => {
      this.inFlight = undefined;
    });
    return this.inFlight;
  }

  private async runRefresh(): Promise<void> {
    const shared = new Map<string, Promise<unknown>>();
    const ctx: ScrapeContext = {
      db: this.options.db,
      liveCounts: this.liveCounts,
      once: <T>(key: string, read: () => Promise<T>) => {
        if (!shared.has(key)) shared.set(key, read());
        return shared.get(key) as Promise<T>;
      },
      cached: this.cached,
      topTenants: this.options.topTenants,
    };
    const results = await Promise.allSettled(this.defs.map((def): Promise<Sample[] | HistogramSample[]> => def.read(ctx)));
    let isUp = true;
    results.forEach((result, i) => {
      const def = this.defs[i]!;
      if (result.status === "fulfilled") {
        this.samples.set(def.name, result.value);
      } else {
        isUp = false;
        this.samples.delete(def.name);
        this.options.onReadError?.(def.name, result.reason as Error);
      }
    });
    this.isUp = isUp;
  }

  /** One scrape: refresh, then the exposition text and its content type. */
  async render(): Promise<{ body: string; contentType: string }> {
    await this.refresh();
    return { body: await this.registry.metrics(), contentType: this.registry.contentType };
  }
}
