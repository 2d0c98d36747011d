// The flow series against a recorded workload: three hours of enqueues, claims, acks and failures
// through core's real paths on a moved clock, two of the hours folded. Every step of every window
// must be present, and each step's counts equal the rollup rows' ground truth summed by hand (minute
// rows up to 6 h; beyond, the hour rows and the minutes after the last hour folded).
import type { TJobError } from "@porter/contracts";
import { useTestDatabase } from "@porter/db/testing/test-database";
import pg from "pg";
import { beforeAll, describe, expect, it } from "vitest";
import { claimJobs } from "../sql/claim-jobs";
import { completeJobs } from "../sql/complete-jobs";
import { enqueueJobs } from "../sql/enqueue-jobs";
import { failJobs } from "../sql/fail-jobs";
import { foldFlowHours } from "../sql/flow-fold";
import { FLOW_LAST_BUCKET } from "../sql/flow-write";
import { runMaintenance } from "../sql/maintenance";
import { pruneQueueSamples, QUEUE_SAMPLE_RETENTION_MS, sampleQueues } from "../sql/queue-samples";
import { controlPlane } from "../testing/control-plane-factory";
import { histogramQuantile } from "./flow";
import { FLOW_SERIES_WINDOWS, type FlowSeriesWindow, readFlowSeries } from "./flow-series";
import { readSignals } from "./signals";

const db = useTestDatabase();
const T0 = new Date("2026-11-30T10:00:00.000Z");
const at = (ms: number) => new Date(T0.getTime() + ms);
const MIN = 60_000;
const HOUR = 3_600_000;
/** The series are read at 12:50:30, 2 h 50 min into the workload; the hours 10:00 and 11:00 are folded. */
const NOW = at(2 * HOUR + 50 * MIN + 30_000);
const COUNTERS = ["arrivals", "starts", "succeeded", "dead", "cancelled", "expired", "retried", "throttles", "lease_expiries"] as const;
type Counts = Record<(typeof COUNTERS)[number], number>;

const error = (attempt: number, code: string): TJobError => ({
  code,
  class: "retryable",
  message: code,
  worker_version: "test",
  attempt,
  trace_id: "t",
  last_checkpoint: null,
});
const lcg = (seed: number) => () => {
  seed = (seed * 1103515245 + 12345) % 2 ** 31;
  return seed / 2 ** 31;
};

beforeAll(async () => {
  await controlPlane(db.pool, {
    queues: [
      { id: "q1", lease_seconds: 30, max_runtime_s: 600, target_wait_s: 60 },
      { id: "q2", lease_seconds: 30, max_runtime_s: 600 },
    ],
  });
  const random = lcg(7);
  let n = 0;
  // Every 2 minutes for 2 h 50 min: a few arrivals, then a claim whose jobs succeed, retry (some
  // rate-limited) or die after 5 ms … 20 s.
  for (let t = 0; t < 2 * HOUR + 50 * MIN; t += 2 * MIN) {
    await enqueueJobs(
      db.pool,
      Array.from({ length: 1 + (n % 3) }, () => ({
        job_type: n % 4 === 0 ? "q2.job" : "q1.job",
        tenant_id: n % 2 === 0 ? "tenant_A" : "tenant_B",
        idempotency_key: `k${n}`,
        payload: { n: n++ },
        max_attempts: 3,
      })),
      { now: at(t) },
    );
    const claimed = await claimJobs(db.pool, { poolId: "p1", workerId: "w1", limit: 2, now: at(t + 20_000 + Math.floor(random() * 40_000)) });
    for (const job of claimed) {
      const end = at(t + 61_000 + Math.floor(random() ** 2 * 20_000));
      const ref = { id: job.id, leaseToken: job.leaseToken, attempt: job.attempt };
      const roll = random();
      if (roll < 0.6 || job.attempt >= 3) await completeJobs(db.pool, [{ ...ref, result: null }], end);
      else if (roll < 0.85)
        await failJobs(
          db.pool,
          [
            {
              ...ref,
              outcome: "failed",
              error: error(job.attempt, roll < 0.75 ? "BOOM" : "RATE_LIMITED"),
              next: { state: "RETRY_WAIT", runAt: at(t + 90_000) },
            },
          ],
          end,
        );
      else await failJobs(db.pool, [{ ...ref, outcome: "failed", error: error(job.attempt, "FATAL"), next: { state: "DEAD" } }], end);
    }
  }
  expect((await foldFlowHours(db.pool, { now: at(2 * HOUR + 10 * MIN) })).hours).toBe(2);
});

/** Ground truth: the rollup rows of one grain, summed by hand into steps of `stepMs`. */
const truth = async (grain: 1 | 60, stepMs: number, where = "true"): Promise<Map<number, Counts>> => {
  const { rows } = await db.pool.query<Record<string, string> & { at: Date }>(
    `SELECT at, ${COUNTERS.map((c) => `${c}::text`).join(", ")} FROM flow_rollups WHERE grain = $1 AND ${where}`,
    [grain],
  );
  const steps = new Map<number, Counts>();
  for (const r of rows) {
    const step = Math.floor(r.at.getTime() / stepMs) * stepMs;
    const c = steps.get(step) ?? (Object.fromEntries(COUNTERS.map((k) => [k, 0])) as Counts);
    for (const k of COUNTERS) c[k] += Number(r[k]);
    steps.set(step, c);
  }
  return steps;
};
const asCounts = (p: Awaited<ReturnType<typeof readFlowSeries>>["points"][number]): Counts => ({
  arrivals: p.arrivals,
  starts: p.starts,
  succeeded: p.succeeded,
  dead: p.dead,
  cancelled: p.cancelled,
  expired: p.expired,
  retried: p.retried,
  throttles: p.throttles,
  lease_expiries: p.leaseExpiries,
});
const zero = Object.fromEntries(COUNTERS.map((k) => [k, 0])) as Counts;

describe("readFlowSeries", () => {
  it("every step present, in order, at the window's step; the last step holds now", async () => {
    for (const [window, { windowS, stepS }] of Object.entries(FLOW_SERIES_WINDOWS) as Array<[FlowSeriesWindow, { windowS: number; stepS: number }]>) {
      const s = await readFlowSeries(db.pool, { window, now: NOW });
      expect(s.points, window).toHaveLength(windowS / stepS);
      expect(s.stepS).toBe(stepS);
      s.points.forEach((p, i) => {
        expect(p.at.getTime(), `${window} step ${i}`).toBe(s.from.getTime() + i * stepS * 1000);
      });
      expect(s.to.getTime() - s.from.getTime()).toBe(windowS * 1000);
      expect(s.points.at(-1)!.at.getTime()).toBeLessThanOrEqual(NOW.getTime());
      expect(s.to.getTime()).toBeGreaterThan(NOW.getTime());
    }
  });

  it("15 min, 1 h and 6 h: each step is the sum of the minute rows in it (zeros elsewhere)", async () => {
    for (const window of ["15m", "1h", "6h"] as const) {
      const s = await readFlowSeries(db.pool, { window, now: NOW });
      const expected = await truth(1, s.stepS * 1000);
      for (const p of s.points) expect(asCounts(p), `${window} ${p.at.toISOString()}`).toEqual(expected.get(p.at.getTime()) ?? zero);
      // Not vacuous: the 6 h window holds the whole workload, with traffic of every kind.
      if (window === "6h") {
        const sum = s.points.reduce((a, p) => a + p.arrivals, 0);
        expect(sum).toBe(Number((await db.pool.query("SELECT sum(arrivals)::int AS n FROM flow_rollups WHERE grain = 1")).rows[0].n));
        for (const k of ["succeeded", "dead", "retried", "throttles"] as const)
          expect(
            s.points.some((p) => p[k] > 0),
            k,
          ).toBe(true);
        expect(s.points.filter((p) => p.arrivals === 0).length).toBeGreaterThan(30); // before 10:00, steps of zeros
      }
    }
  });

  it("24 h and 7 d: the folded hours from hour rows, the hour after the last fold from its minutes — the same totals as 6 h", async () => {
    const six = await readFlowSeries(db.pool, { window: "6h", now: NOW });
    const hourRows = await truth(60, HOUR);
    const lateMinutes = await truth(1, HOUR, `at >= '${at(2 * HOUR).toISOString()}'`);
    expect([...hourRows.keys()].sort()).toEqual([T0.getTime(), at(HOUR).getTime()]);
    expect(lateMinutes.size).toBe(1);
    for (const window of ["24h", "7d"] as const) {
      const s = await readFlowSeries(db.pool, { window, now: NOW });
      for (const p of s.points) {
        const t = p.at.getTime();
        expect(asCounts(p), `${window} ${p.at.toISOString()}`).toEqual(hourRows.get(t) ?? lateMinutes.get(t) ?? zero);
      }
      // The hour rows equal their minutes (nothing counted twice across the boundary), so the
      // totals match the 6 h window's minute steps.
      for (const k of COUNTERS) {
        const key = k === "lease_expiries" ? "leaseExpiries" : k;
        const sum = (points: typeof s.points) => points.reduce((a, p) => a + (p[key as keyof typeof p] as number), 0);
        expect(sum(s.points), `${window} ${k}`).toBe(sum(six.points));
      }
    }
    // A minute row written into a folded hour after its fold is not read by the hour series (the
    // hour rows are), and is by the minute series: the rule is readFlow's.
    const before = (await readFlowSeries(db.pool, { window: "24h", now: NOW })).points.find((p) => p.at.getTime() === T0.getTime())!.arrivals;
    await db.pool.query(
      `INSERT INTO flow_rollups (grain, at, queue_id, job_type, tenant_id, shard, arrivals) VALUES (1, $1, 'q1', 'q1.job', 'tenant_A', 15, 1000)`,
      [at(5 * MIN)],
    );
    try {
      expect((await readFlowSeries(db.pool, { window: "24h", now: NOW })).points.find((p) => p.at.getTime() === T0.getTime())!.arrivals).toBe(before);
      const sixAfter = await readFlowSeries(db.pool, { window: "6h", now: NOW });
      expect(sixAfter.points.find((p) => p.at.getTime() === at(5 * MIN).getTime())!.arrivals).toBeGreaterThanOrEqual(1000);
    } finally {
      await db.pool.query("DELETE FROM flow_rollups WHERE grain = 1 AND shard = 15 AND at = $1 AND arrivals = 1000", [at(5 * MIN)]);
    }
  });

  it("percentiles per step from that step's histogram rows; null for an empty step", async () => {
    const s = await readFlowSeries(db.pool, { window: "1h", now: NOW });
    const { rows } = await db.pool.query<{ at: Date; kind: string; bucket: number; n: string }>(
      "SELECT at, kind, bucket, sum(n)::text AS n FROM flow_histograms WHERE grain = 1 AND at >= $1 GROUP BY 1, 2, 3",
      [s.from],
    );
    let checked = 0;
    for (const p of s.points) {
      const mine = rows.filter((r) => r.at.getTime() === p.at.getTime());
      for (const [kind, got] of [
        ["w", p.waitMs],
        ["r", p.runMs],
      ] as const) {
        const h = new Array(FLOW_LAST_BUCKET + 1).fill(0);
        for (const r of mine.filter((r) => r.kind === kind)) h[r.bucket] += Number(r.n);
        expect(got, `${kind} ${p.at.toISOString()}`).toEqual({
          p50: histogramQuantile(h, 0.5)?.ms ?? null,
          p95: histogramQuantile(h, 0.95)?.ms ?? null,
          p99: histogramQuantile(h, 0.99)?.ms ?? null,
        });
        if (got.p95 !== null) checked++;
      }
    }
    expect(checked).toBeGreaterThan(10);
    expect(s.points.some((p) => p.waitMs.p50 === null && p.arrivals === 0 && p.starts === 0)).toBe(true);
  });

  it("scopes narrow: a queue, a tenant, a job type sum to their own rows", async () => {
    const all = await readFlowSeries(db.pool, { window: "6h", now: NOW });
    const q1 = await readFlowSeries(db.pool, { window: "6h", now: NOW, queueId: "q1" });
    const q2 = await readFlowSeries(db.pool, { window: "6h", now: NOW, queueId: "q2" });
    all.points.forEach((p, i) => {
      expect(q1.points[i]!.arrivals + q2.points[i]!.arrivals).toBe(p.arrivals);
    });
    const tenantA = await readFlowSeries(db.pool, { window: "6h", now: NOW, tenantId: "tenant_A" });
    const onlyA = await truth(1, 300_000, "tenant_id = 'tenant_A'");
    for (const p of tenantA.points) expect(asCounts(p)).toEqual(onlyA.get(p.at.getTime()) ?? zero);
    expect(tenantA.hasGauges).toBe(false);
    const jt = await readFlowSeries(db.pool, { window: "6h", now: NOW, jobType: "q2.job" });
    expect(jt.points.map((p) => p.arrivals)).toEqual(q2.points.map((p) => p.arrivals));
    expect(jt.points.every((p) => p.backlogS === null && p.ready === null)).toBe(true);
  });

  it("refuses an unknown window", async () => {
    await expect(readFlowSeries(db.pool, { window: "2h" as FlowSeriesWindow, now: NOW })).rejects.toThrow(/unknown window 2h/);
    await expect(readFlowSeries(db.pool, { window: "constructor" as FlowSeriesWindow, now: NOW })).rejects.toThrow(RangeError);
  });
});

describe("queue samples", () => {
  it("once a minute per queue, idempotently, with the signals' numbers; the series shows the max per step", async () => {
    const minute = at(2 * HOUR + 49 * MIN);
    const first = await sampleQueues(db.pool, { now: new Date(minute.getTime() + 5_000) });
    expect(first.written).toBe(2);
    // The same minute again (a second pass, another leader): nothing.
    expect((await sampleQueues(db.pool, { now: new Date(minute.getTime() + 40_000) })).written).toBe(0);
    const { rows } = await db.pool.query(
      "SELECT at, queue_id, ready, running, backlog_s, oldest_claimable_age_s, is_at_risk FROM queue_samples ORDER BY queue_id",
    );
    expect(rows).toHaveLength(2);
    expect(rows.every((r) => r.at.getTime() === minute.getTime())).toBe(true);
    const signals = await readSignals(db.pool, { now: new Date(minute.getTime() + 5_000) });
    for (const q of signals.queues) {
      const r = rows.find((x) => x.queue_id === q.queueId)!;
      expect(r).toMatchObject({
        ready: q.ready,
        running: q.running,
        backlog_s: q.backlogS,
        oldest_claimable_age_s: q.oldestClaimableAgeS,
        is_at_risk: q.isAtRisk,
      });
    }
    // Two passes in one statement's race: the primary key keeps one row.
    const next = at(2 * HOUR + 50 * MIN + 1_000);
    const both = await Promise.all([sampleQueues(db.pool, { now: next }), sampleQueues(db.pool, { now: next })]);
    expect(both[0].written + both[1].written).toBe(2);

    // The series: per minute the queues' ready summed, the worst backlog; the step's max.
    await db.pool.query(
      `UPDATE queue_samples SET ready = CASE queue_id WHEN 'q1' THEN 7 ELSE 5 END, backlog_s = CASE queue_id WHEN 'q1' THEN 40 ELSE 90 END WHERE at = $1`,
      [at(2 * HOUR + 50 * MIN)],
    );
    const s = await readFlowSeries(db.pool, { window: "15m", now: NOW });
    const last = s.points.at(-1)!;
    expect(last.at.getTime()).toBe(at(2 * HOUR + 50 * MIN).getTime());
    expect(last).toMatchObject({ ready: 12, backlogS: 90 });
    expect(s.points.at(-2)!.ready).toBe(rows.reduce((a, r) => a + r.ready, 0));
    expect(s.points.slice(0, -2).every((p) => p.ready === null && p.backlogS === null)).toBe(true);
    const one = await readFlowSeries(db.pool, { window: "15m", now: NOW, queueId: "q1" });
    expect(one.points.at(-1)).toMatchObject({ ready: 7, backlogS: 40 });
    const hourly = await readFlowSeries(db.pool, { window: "24h", now: NOW });
    expect(hourly.points.at(-1)).toMatchObject({ ready: 12, backlogS: 90 });
  });

  it("a step of every maintenance pass: the first pass of a minute writes, the next ones do not", async () => {
    const minute = at(2 * HOUR + 52 * MIN);
    const first = await runMaintenance(db.pool, { now: new Date(minute.getTime() + 2_000) });
    const second = await runMaintenance(db.pool, { now: new Date(minute.getTime() + 7_000) });
    expect([first.samplesWritten, second.samplesWritten]).toEqual([2, 0]);
    expect((await db.pool.query("SELECT queue_id FROM queue_samples WHERE at = $1 ORDER BY 1", [minute])).rows.map((r) => r.queue_id)).toEqual(["q1", "q2"]);
    expect((await runMaintenance(db.pool, { now: new Date(minute.getTime() + MIN) })).samplesWritten).toBe(2);
  });

  it("on one client (the maintenance leader's connection) runs its reads one at a time: no pg warning of queued queries", async () => {
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(`${w.name}: ${w.message}`);
    process.on("warning", onWarning);
    const client = new pg.Client({ connectionString: db.connectionString });
    await client.connect();
    try {
      const minute = at(2 * HOUR + 55 * MIN);
      expect((await runMaintenance(client, { now: new Date(minute.getTime() + 2_000) })).samplesWritten).toBe(2);
      await new Promise((done) => setImmediate(done));
    } finally {
      process.off("warning", onWarning);
      await client.end();
    }
    expect(warnings.filter((w) => w.includes("already executing a query"))).toEqual([]);
  });

  it("pruned after 8 days, in batches", async () => {
    const old = new Date(NOW.getTime() - QUEUE_SAMPLE_RETENTION_MS - MIN);
    const kept = Number((await db.pool.query("SELECT count(*)::int AS n FROM queue_samples")).rows[0].n);
    expect(kept).toBeGreaterThan(0);
    await db.pool.query(
      `INSERT INTO queue_samples (at, queue_id, ready, running, effective_concurrency)
       SELECT $1::timestamptz - g * interval '1 minute', q, 1, 0, 1 FROM generate_series(0, 4) g, unnest(ARRAY['q1', 'q2']) q`,
      [old],
    );
    expect((await pruneQueueSamples(db.pool, { now: NOW, batch: 3 })).pruned).toBe(10);
    expect(Number((await db.pool.query("SELECT count(*)::int AS n FROM queue_samples")).rows[0].n)).toBe(kept);
    expect((await pruneQueueSamples(db.pool, { now: NOW, batch: 3 })).pruned).toBe(0);
  });
});
