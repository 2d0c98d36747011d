import { type EnqueueInput, enqueueJobs, PolicyCache } from "@porter/core";
import { createPool, migrate } from "@porter/db";
import { defineHandler } from "@porter/sdk";
import { createHandlerMap } from "@porter/worker/handlers/handler-map";
import { createLogger } from "@porter/worker/logger";
import { PorterWorker } from "@porter/worker/runtime/worker";
import type pg from "pg";
import { adminQuery, databaseUrl } from "../database";
import type { Progress } from "../progress";
import { markdownTable } from "../table";

/**
 * Porter's scheduling policy under load (issue 4; peers have no tenant fair share to compare).
 *
 * 1. Shares: tenants A, B (weight 1) and C (weight 2), C with a 10× backlog, one worker draining;
 *    claims per tenant counted while all three still had work; Jain's index over the
 *    weight-normalized shares (1.0 = exactly proportional).
 * 2. Quiet tenants' waits: A and B enqueue at a steady rate, one job per call, while C's backlog is
 *    drained; enqueue→claim p50/p99 of A and B, against the same run without C.
 * 3. Cost of the policy: burn-down jobs/s of a single-tenant queue with no limits (policy off)
 *    vs three weighted tenants with a tenant quota, a queue cap, a pool cap and a resource key,
 *    all set above the worker's slots so they are checked on every claim but never bind.
 */
export type FairnessSizes = { quietJobs: number; noisyFactor: number; arrivalsPerS: number; arrivalSeconds: number; burnJobs: number };
export const FAIRNESS_QUICK: FairnessSizes = { quietJobs: 1000, noisyFactor: 10, arrivalsPerS: 50, arrivalSeconds: 5, burnJobs: 10_000 };
export const FAIRNESS_FULL: FairnessSizes = { quietJobs: 2000, noisyFactor: 10, arrivalsPerS: 100, arrivalSeconds: 10, burnJobs: 40_000 };

const TENANTS = [
  { id: "A", weight: 1 },
  { id: "B", weight: 1 },
  { id: "C", weight: 2 },
];
const CONCURRENCY = 24;

const percentile = (sorted: number[], p: number) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]! : NaN);
const jain = (xs: number[]) => xs.reduce((a, b) => a + b, 0) ** 2 / (xs.length * xs.reduce((a, b) => a + b * b, 0));

const withDatabase = async <T>(adminUrl: string, label: string, fn: (pool: pg.Pool, url: string) => Promise<T>): Promise<T> => {
  const name = `porter_bench_fair_${label}_${Date.now()}`;
  await adminQuery(adminUrl, `CREATE DATABASE ${name}`);
  const url = databaseUrl(adminUrl, name);
  const pool = createPool(url, { max: 12, applicationName: "porter-bench-fairness" });
  try {
    await migrate(url);
    return await fn(pool, url);
  } finally {
    await pool.end();
    await adminQuery(adminUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  }
};

const setup = async (pool: pg.Pool, policy: boolean) => {
  await pool.query(`INSERT INTO pools (id, worker_concurrency, concurrency_cap) VALUES ('fair', $1, $2)`, [CONCURRENCY, policy ? 1000 : null]);
  if (policy) await pool.query(`INSERT INTO resource_keys (id, concurrency_limit) VALUES ('provider', 1000)`);
  await pool.query(`INSERT INTO queues (id, pool_id, lease_seconds, concurrency_cap, resource_key_id) VALUES ('fair', 'fair', 60, $1, $2)`, [
    policy ? 1000 : null,
    policy ? "provider" : null,
  ]);
  await pool.query(`INSERT INTO job_types (id, queue_id) VALUES ('bench.noop', 'fair')`);
  for (const t of TENANTS) await pool.query(`INSERT INTO tenants (id, weight, max_running) VALUES ($1, $2, $3)`, [t.id, t.weight, policy ? 1000 : null]);
};

const startWorker = (pool: pg.Pool, url: string, handlerMs: number) =>
  PorterWorker.start({
    db: pool,
    connectionString: url,
    poolId: "fair",
    concurrency: CONCURRENCY,
    logger: createLogger({ level: "warn" }),
    handlers: createHandlerMap([defineHandler({ type: "bench.noop", run: async () => (handlerMs ? new Promise((r) => setTimeout(r, handlerMs)) : null) })]),
    maintenance: false,
  });

const jobsOf = (tenant: string, n: number, from = 0): EnqueueInput[] =>
  Array.from({ length: n }, (_, i) => ({ job_type: "bench.noop", tenant_id: tenant, payload: { i: from + i }, idempotency_key: `${tenant}-${from + i}` }));

const waitDrained = async (pool: pg.Pool, progress: Progress, what: string, capMs = 600_000) => {
  const until = Date.now() + capMs;
  for (;;) {
    const { rows } = await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM jobs`);
    progress.update(`fairness: ${what}, ${rows[0]!.n} left`);
    if (rows[0]!.n === 0 || Date.now() > until) return;
    await new Promise((r) => setTimeout(r, 200));
  }
};

/** Shares while all tenants had work: claims per tenant up to the moment the first one ran out. */
const shares = async (adminUrl: string, sizes: FairnessSizes, progress: Progress) =>
  withDatabase(adminUrl, "shares", async (pool, url) => {
    await setup(pool, false);
    for (const t of TENANTS) {
      const n = t.id === "C" ? sizes.quietJobs * sizes.noisyFactor : sizes.quietJobs;
      for (let done = 0; done < n; done += 1000) await enqueueJobs(pool, jobsOf(t.id, Math.min(1000, n - done), done), { notify: false });
    }
    const worker = await startWorker(pool, url, 2);
    await waitDrained(pool, progress, "shares");
    await worker.drain({ graceMs: 1000 });
    const { rows } = await pool.query<{ tenant_id: string; claimed_at: Date }>(`SELECT tenant_id, claimed_at FROM finished_jobs ORDER BY claimed_at, id`);
    const lastOf = new Map<string, number>();
    for (const r of rows) lastOf.set(r.tenant_id, r.claimed_at.getTime());
    const cutoff = Math.min(...lastOf.values());
    const counts = new Map(TENANTS.map((t) => [t.id, 0]));
    for (const r of rows) if (r.claimed_at.getTime() < cutoff) counts.set(r.tenant_id, counts.get(r.tenant_id)! + 1);
    const total = [...counts.values()].reduce((a, b) => a + b, 0);
    const weightSum = TENANTS.reduce((a, t) => a + t.weight, 0);
    const normalized = TENANTS.map((t) => counts.get(t.id)! / total / (t.weight / weightSum));
    return { counts, total, share: (id: string) => counts.get(id)! / total, jain: jain(normalized) };
  });

/** Steady single enqueues of A and B while (optionally) C's backlog drains; their enqueue→claim waits. */
const waits = async (adminUrl: string, sizes: FairnessSizes, progress: Progress, withNoisy: boolean) =>
  withDatabase(adminUrl, withNoisy ? "noisy" : "alone", async (pool, url) => {
    await setup(pool, false);
    if (withNoisy) {
      const n = sizes.quietJobs * sizes.noisyFactor;
      for (let done = 0; done < n; done += 1000) await enqueueJobs(pool, jobsOf("C", Math.min(1000, n - done), done), { notify: false });
    }
    const worker = await startWorker(pool, url, 5);
    const policyCache = new PolicyCache({ ttlMs: 60_000 });
    const stopAt = Date.now() + sizes.arrivalSeconds * 1000;
    const intervalMs = 1000 / sizes.arrivalsPerS;
    let k = 0;
    await Promise.all(
      ["A", "B"].map(async (tenant) => {
        for (let next = Date.now(); next < stopAt; next += intervalMs) {
          await new Promise((r) => setTimeout(r, Math.max(0, next - Date.now())));
          await enqueueJobs(pool, jobsOf(tenant, 1, 1_000_000 + k++), { policyCache });
        }
      }),
    );
    progress.update(`fairness: waits (${withNoisy ? "with" : "without"} the noisy tenant), draining`);
    const until = Date.now() + 120_000;
    while (Date.now() < until) {
      const { rows } = await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM jobs WHERE tenant_id IN ('A', 'B')`);
      if (rows[0]!.n === 0) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    await worker.drain({ graceMs: 500 });
    const { rows } = await pool.query<{ ms: number }>(
      `SELECT extract(epoch FROM claimed_at - created_at) * 1000 AS ms FROM finished_jobs WHERE tenant_id IN ('A', 'B') ORDER BY 1`,
    );
    const ms = rows.map((r) => Number(r.ms));
    return { n: ms.length, p50: percentile(ms, 0.5), p99: percentile(ms, 0.99) };
  });

/** Burn-down jobs/s with the policy off (one tenant, no limits) and on (weighted tenants, limits checked). */
const policyCost = async (adminUrl: string, sizes: FairnessSizes, progress: Progress, policy: boolean) =>
  withDatabase(adminUrl, policy ? "on" : "off", async (pool, url) => {
    await setup(pool, policy);
    const tenants = policy ? TENANTS.map((t) => t.id) : ["A"];
    const per = Math.ceil(sizes.burnJobs / tenants.length);
    for (const t of tenants)
      for (let done = 0; done < per; done += 1000) await enqueueJobs(pool, jobsOf(t, Math.min(1000, per - done), done), { notify: false });
    const t0 = performance.now();
    const worker = await startWorker(pool, url, 0);
    await waitDrained(pool, progress, `burn-down with the policy ${policy ? "on" : "off"}`);
    const seconds = (performance.now() - t0) / 1000;
    await worker.drain({ graceMs: 1000 });
    return (per * tenants.length) / seconds;
  });

/** Runs the fairness scenario and returns its markdown. */
export const fairness = async (adminUrl: string, sizes: FairnessSizes, progress: Progress): Promise<{ markdown: string; details: unknown }> => {
  progress.update("fairness: shares");
  const s = await shares(adminUrl, sizes, progress);
  const alone = await waits(adminUrl, sizes, progress, false);
  const noisy = await waits(adminUrl, sizes, progress, true);
  const off = await policyCost(adminUrl, sizes, progress, false);
  const on = await policyCost(adminUrl, sizes, progress, true);
  progress.done(
    `fairness: Jain ${s.jain.toFixed(4)}, quiet p99 ${noisy.p99.toFixed(0)} ms vs ${alone.p99.toFixed(0)} ms alone, policy on/off ${(on / off).toFixed(2)}×`,
  );
  const fmt = (n: number, d = 0) => n.toLocaleString("en-US", { maximumFractionDigits: d, minimumFractionDigits: d });
  const weightSum = TENANTS.reduce((a, t) => a + t.weight, 0);
  const markdown = [
    `### fairness — Porter's weighted fair share, waits and the cost of the policy`,
    "",
    markdownTable(
      ["tenant", "weight", "backlog", "claims while all had work", "share", "target share"],
      TENANTS.map((t) => [
        t.id,
        String(t.weight),
        fmt(t.id === "C" ? sizes.quietJobs * sizes.noisyFactor : sizes.quietJobs),
        fmt(s.counts.get(t.id)!),
        fmt(s.share(t.id), 3),
        fmt(t.weight / weightSum, 3),
      ]),
    ),
    "",
    `Jain's fairness index over weight-normalized shares: **${s.jain.toFixed(4)}** (1 = exactly proportional).`,
    "",
    markdownTable(
      ["quiet tenants A+B, one enqueue per call", "jobs", "enqueue→claim p50 ms", "p99 ms"],
      [
        ["alone", fmt(alone.n), fmt(alone.p50, 1), fmt(alone.p99, 1)],
        [`with C's ${fmt(sizes.quietJobs * sizes.noisyFactor)}-job backlog draining`, fmt(noisy.n), fmt(noisy.p50, 1), fmt(noisy.p99, 1)],
        ["ratio (with ÷ alone)", "", `${fmt(noisy.p50 / alone.p50, 2)}×`, `${fmt(noisy.p99 / alone.p99, 2)}×`],
      ],
    ),
    "",
    markdownTable(
      ["burn-down, one worker, 24 slots", "jobs/s"],
      [
        ["policy off (one tenant, no limits)", fmt(off)],
        ["policy on (3 weighted tenants; tenant quota, queue cap, pool cap, resource key checked on every claim)", fmt(on)],
        ["ratio on ÷ off", `${fmt(on / off, 2)}×`],
      ],
    ),
    "",
    `A and B enqueue ${sizes.arrivalsPerS} jobs/s each for ${sizes.arrivalSeconds} s; handlers sleep 2–5 ms; one in-process PorterWorker.`,
  ].join("\n");
  return { markdown, details: { shares: Object.fromEntries(s.counts), jain: s.jain, alone, noisy, policyOff: off, policyOn: on } };
};
