import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";
import type { AttemptOutcome, WorkerProbe } from "../runtime/worker-probe";

/** What the gauges read at scrape time: the running worker's own state (no database). */
export type WorkerGaugeSource = {
  readonly concurrency: number;
  readonly running: number;
  readonly buffered: number;
  readonly prefetchLimit: number;
};

/** Batch sizes: one job up to the completer's and the prefetch's ceilings (1000). */
const BATCH_BUCKETS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000];

/** Claim round trips: 1 ms to 5 s (a claim waiting on a busy server or a restart). */
const CLAIM_SECONDS_BUCKETS = [0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5];

/**
 * One worker process's Prometheus registry (its own, never prom-client's global one): counters and
 * histograms fed by the runtime's {@link WorkerProbe} calls (in memory, no database cost), gauges
 * read from the worker when scraped, and Node's process metrics (event-loop lag among them) with a
 * `porter_worker_` prefix. Every series carries `pool` and `worker_id` as default labels.
 */
export class WorkerMetrics {
  readonly registry = new Registry();
  readonly probe: WorkerProbe;
  private source: WorkerGaugeSource | undefined;

  constructor(labels: { pool: string; workerId: string }) {
    this.registry.setDefaultLabels({ pool: labels.pool, worker_id: labels.workerId });
    collectDefaultMetrics({ register: this.registry, prefix: "porter_worker_", eventLoopMonitoringPrecision: 10 });
    const registers = [this.registry];
    const claims = new Counter({ name: "porter_worker_claims_total", help: "Claim statements run (empty claims included).", registers });
    const claimed = new Histogram({
      name: "porter_worker_claimed_rows",
      help: "Jobs returned per claim statement.",
      buckets: [0, ...BATCH_BUCKETS],
      registers,
    });
    const writes = new Histogram({
      name: "porter_worker_result_batch_rows",
      help: "Results written per completer statement, by kind (ack: completeJobs, fail: failJobs).",
      labelNames: ["kind"],
      buckets: BATCH_BUCKETS,
      registers,
    });
    const heartbeats = new Counter({ name: "porter_worker_heartbeats_total", help: "Batched lease extensions sent.", registers });
    const heartbeatLeases = new Counter({ name: "porter_worker_heartbeat_leases_total", help: "Leases carried by those extensions.", registers });
    // Per job, so a plain in-memory tally (a few ns) rather than a labelled inc (~600 ns measured
    // here); the counter copies the tally when scraped.
    const tally = new Map<string, { jobType: string; outcome: AttemptOutcome; n: number }>();
    new Counter({
      name: "porter_worker_attempts_total",
      help: "Attempts this process ended, by job type and outcome (succeeded, retry, dead, cancelled, expired).",
      labelNames: ["job_type", "outcome"],
      registers,
      collect() {
        this.reset();
        for (const t of tally.values()) this.inc({ job_type: t.jobType, outcome: t.outcome }, t.n);
      },
    });
    const gauges: ReadonlyArray<readonly [string, string, (s: WorkerGaugeSource) => number]> = [
      ["porter_worker_slots", "Slots: attempts this process runs at once.", (s) => s.concurrency],
      ["porter_worker_slots_busy", "Slots running an attempt now.", (s) => s.running],
      ["porter_worker_prefetch_buffered", "Claimed jobs waiting in the prefetch buffer for a slot.", (s) => s.buffered],
      ["porter_worker_prefetch_limit", "The prefetch in force: most jobs held ahead of free slots.", (s) => s.prefetchLimit],
    ];
    for (const [name, help, pick] of gauges) {
      const source = () => this.source;
      new Gauge({
        name,
        help,
        registers,
        collect() {
          const s = source();
          if (s) this.set(pick(s));
        },
      });
    }
    const claimSeconds = new Histogram({
      name: "porter_worker_claim_seconds",
      help: "Claim statements' round trip as the worker waited for it (empty claims included).",
      buckets: CLAIM_SECONDS_BUCKETS,
      registers,
    });
    this.probe = {
      onClaim: (rows, seconds) => {
        claims.inc();
        claimed.observe(rows);
        claimSeconds.observe(seconds);
      },
      onWrite: (kind, rows) => writes.observe({ kind }, rows),
      onHeartbeat: (leases) => {
        heartbeats.inc();
        heartbeatLeases.inc(leases);
      },
      onOutcome: (jobType, outcome) => {
        const key = `${outcome}:${jobType}`;
        const t = tally.get(key);
        if (t) t.n += 1;
        else tally.set(key, { jobType, outcome, n: 1 });
      },
    };
  }

  /** Gives the gauges the worker to read (set once it has started). */
  attach(source: WorkerGaugeSource): void {
    this.source = source;
  }

  /** The exposition text and its content type. */
  async render(): Promise<{ body: string; contentType: string }> {
    return { body: await this.registry.metrics(), contentType: this.registry.contentType };
  }
}
