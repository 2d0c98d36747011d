import { monitorEventLoopDelay } from "node:perf_hooks";
// Probe (not part of the suite): scenario (i)'s burn-down and arrivals with PorterWorker in this
// process, instrumented. Every claim (limit, start, rows per queue, bounds, ms, slots busy before),
// every result write (rows, ms), and a 1 ms sampler of slots busy / buffered / per-queue running
// handlers. Prints a timeline per 100 ms and the claim log's summary.
//   npx tsx bench/src/probe/realistic-probe.ts [jobs=6000] [arrivalsPerS=1000] [arrivalS=3]
//   ONLY=bulk: every job in that queue (the capped queue's cycle alone).
import { enqueueJobs, PolicyCache } from "@porter/core";
import { migrate } from "@porter/db/migrator";
import { createPool } from "@porter/db/pool";
import { defineHandler } from "@porter/sdk";
import { createHandlerMap } from "@porter/worker/handlers/handler-map";
import { createLogger } from "@porter/worker/logger";
import { PorterWorker } from "@porter/worker/runtime/worker";
import pg from "pg";
import { createDatabase } from "../database";
import { durationOf, queueOf, REALISTIC_QUEUES, REALISTIC_TENANTS, tenantOf } from "../realistic-mix";

const admin = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const jobs = Number(process.argv[2] ?? 6000);
const rate = Number(process.argv[3] ?? 1000);
const arrivalS = Number(process.argv[4] ?? 3);
const POOL = "bench";

const db = await createDatabase(admin, "rprobe");
try {
  await migrate(db.url);
  const pool = createPool(db.url, { max: 26, applicationName: "probe-worker" });
  const producer = createPool(db.url, { max: 4, applicationName: "probe-producer" });
  await pool.query(`INSERT INTO pools (id, worker_concurrency) VALUES ($1, 24)`, [POOL]);
  for (const q of REALISTIC_QUEUES) {
    await pool.query(`INSERT INTO queues (id, pool_id, default_max_attempts, max_attempts, concurrency_cap) VALUES ($1, $2, 25, 25, $3)`, [q.id, POOL, q.cap]);
    await pool.query(`INSERT INTO job_types (id, queue_id) VALUES ($1, $2)`, [`${q.id}.job`, q.id]);
  }
  for (const t of REALISTIC_TENANTS) await pool.query(`INSERT INTO tenants (id, weight) VALUES ($1, $2)`, [t.id, t.weight]);
  const policyCache = new PolicyCache({ ttlMs: 1000 });
  const enqueue = (ks: Array<{ k: number; t?: number }>) =>
    enqueueJobs(
      producer,
      ks.map(({ k, t }) => ({
        job_type: `${process.env.ONLY ?? queueOf(k).id}.job`,
        tenant_id: tenantOf(k).id,
        payload: t === undefined ? { k } : { k, t },
        idempotency_key: `r-${k}`,
      })),
      { policyCache },
    );
  for (let done = 0; done < jobs; done += 1000) await enqueue(Array.from({ length: Math.min(1000, jobs - done) }, (_, i) => ({ k: done + i + 1 })));

  // Instrumentation: wrap the worker pool's query to see claims and result writes.
  type Claim = { at: number; ms: number; limit: number; start: number; got: Record<string, number>; bounds: string[]; busy: number; buffered: number };
  const claims: Claim[] = [];
  const writes: Array<{ at: number; ms: number; kind: string }> = [];
  let worker: PorterWorker | undefined;
  let txns = 0;
  let fusedAcks = 0;
  const t0 = performance.now();
  // Every statement of every connection (a pool's query and a checked-out client's alike).
  const proto = pg.Client.prototype as unknown as { query: (...a: unknown[]) => Promise<{ rows: unknown[] }> };
  const origQuery = proto.query;
  proto.query = async function (this: unknown, ...args: unknown[]) {
    const orig = (...a: unknown[]) => origQuery.apply(this, a);
    const q = args[0] as { name?: string; text?: string; values?: unknown[] } | string;
    const name = typeof q === "object" ? (q.name ?? q.text?.slice(0, 40)) : q.slice(0, 40);
    const at = performance.now();
    const busy = worker?.running ?? 0;
    const buffered = worker?.buffered ?? 0;
    const cb = args[args.length - 1];
    if (typeof cb === "function") {
      return orig(...args.slice(0, -1), (err: unknown, res: { rows: unknown[] }) => {
        if (!err) record.call(this, q, name, at, busy, buffered, res);
        cb(err, res);
      });
    }
    if (typeof q === "object" && typeof (q as { submit?: unknown }).submit === "function") return orig(...args);
    const res = await orig(...args);
    record.call(this, q, name, at, busy, buffered, res);
    return res;
  };
  const record = function (
    this: unknown,
    q: { name?: string; text?: string; values?: unknown[] } | string,
    name: string | undefined,
    at: number,
    busy: number,
    buffered: number,
    res: { rows: unknown[] },
  ) {
    const ms = performance.now() - at;
    const client = this as { inTx?: boolean };
    if (name === "BEGIN") client.inTx = true;
    if (name === "COMMIT" || name === "ROLLBACK") client.inTx = false;
    if (name === "porter.complete" && client.inTx && typeof q === "object") {
      txns += 1;
      fusedAcks += ((q.values?.[0] ?? []) as unknown[]).length;
    }
    if (typeof q === "object" && q.name === "porter.claim") {
      const got: Record<string, number> = {};
      const bounds: string[] = [];
      for (const r of res.rows as unknown[][]) {
        if (r[25] !== null) bounds.push(String(r[25]));
        else got[String(r[3])] = (got[String(r[3])] ?? 0) + 1;
      }
      claims.push({ at: at - t0, ms, limit: Number(q.values?.[2]), start: Number(q.values?.[4]), got, bounds, busy, buffered });
    } else if (name && /complete|fail|start/i.test(String(name))) {
      writes.push({ at: at - t0, ms, kind: String(name).replace(/\s+/g, " ").slice(0, 30) });
    }
  };

  const running: Record<string, number> = Object.fromEntries(REALISTIC_QUEUES.map((q) => [q.id, 0]));
  const startLat: Array<{ q: string; ms: number; at: number }> = [];
  let succeeded = 0;
  const handlerMs = { actual: 0, nominal: 0 };
  const lag = monitorEventLoopDelay({ resolution: 1 });
  lag.enable();
  let firstStart = 0;
  const handlers = REALISTIC_QUEUES.map((q) =>
    defineHandler({
      type: `${q.id}.job`,
      run: async (job) => {
        const p = job.payload as { k: number; t?: number };
        const now = performance.now();
        if (firstStart === 0) firstStart = now;
        if (p.t !== undefined) startLat.push({ q: q.id, ms: now + performance.timeOrigin - p.t, at: now - t0 });
        running[q.id]! += 1;
        const ms = durationOf(p.k);
        const h0 = performance.now();
        if (ms > 0) await new Promise((r) => setTimeout(r, ms));
        handlerMs.actual += performance.now() - h0;
        handlerMs.nominal += ms;
        running[q.id]! -= 1;
        succeeded += 1;
        return null;
      },
    }),
  );
  // Sampler.
  type Sample = { at: number; busy: number; buffered: number; q: Record<string, number> };
  const samples: Sample[] = [];
  const sampler = setInterval(() => {
    if (worker) samples.push({ at: performance.now() - t0, busy: worker.running, buffered: worker.buffered, q: { ...running } });
  }, 1);

  worker = await PorterWorker.start({
    db: pool,
    connectionString: db.url,
    poolId: POOL,
    concurrency: 24,
    logger: createLogger({ level: "error" }),
    handlers: createHandlerMap(handlers),
    // HANDOVER=0: the capped queues' rooms are claimed again by the claim loop (the A/B of issue 15's hand-over).
    capHandover: process.env.HANDOVER !== "0",
  });
  while (succeeded < jobs) await new Promise((r) => setTimeout(r, 2));
  const burnS = (performance.now() - firstStart) / 1000;
  const burnEnd = performance.now() - t0;
  console.log(
    `handler ms actual ${handlerMs.actual.toFixed(0)} nominal ${handlerMs.nominal}; event loop delay p50 ${(lag.percentile(50) / 1e6).toFixed(1)} p99 ${(lag.percentile(99) / 1e6).toFixed(1)} ms`,
  );
  console.log(`burn-down: ${jobs} in ${burnS.toFixed(2)} s = ${(jobs / burnS).toFixed(0)} jobs/s (handler-side)`);

  // Arrivals.
  const a0 = performance.now();
  let k = jobs + 1;
  let sent = 0;
  while (performance.now() - a0 < arrivalS * 1000) {
    const due = Math.floor((rate * (performance.now() - a0)) / 1000) - sent;
    if (due <= 0) {
      await new Promise((r) => setTimeout(r, 5));
      continue;
    }
    const t = performance.timeOrigin + performance.now();
    await enqueue(Array.from({ length: Math.min(due, 1000) }, () => ({ k: k++, t })));
    sent += Math.min(due, 1000);
  }
  while (succeeded < jobs + sent) await new Promise((r) => setTimeout(r, 2));
  clearInterval(sampler);
  await worker.drain({ graceMs: 1000 });

  // Report.
  const pct = (xs: number[], p: number) => {
    const s = [...xs].sort((a, b) => a - b);
    return s.length === 0 ? Number.NaN : s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
  };
  console.log("\ntimeline (100 ms buckets, burn-down): mean busy, mean buffered, mean running per queue, claims, rows claimed per queue");
  const end = burnEnd;
  for (let b = 0; b * 100 < end + 100; b++) {
    const ss = samples.filter((s) => s.at >= b * 100 && s.at < (b + 1) * 100);
    if (ss.length === 0) continue;
    const cs = claims.filter((c) => c.at >= b * 100 && c.at < (b + 1) * 100);
    const got: Record<string, number> = {};
    for (const c of cs) for (const [q, n] of Object.entries(c.got)) got[q] = (got[q] ?? 0) + n;
    const mean = (f: (s: Sample) => number) => (ss.reduce((a, s) => a + f(s), 0) / ss.length).toFixed(1);
    console.log(
      `${String(b * 100).padStart(6)} ms busy ${mean((s) => s.busy).padStart(5)} buf ${mean((s) => s.buffered).padStart(6)} | ${REALISTIC_QUEUES.map((q) => `${q.id} ${mean((s) => s.q[q.id]!)}`).join(" ")} | claims ${cs.length} ms ${cs.map((c) => c.ms.toFixed(0)).join(",")} got ${JSON.stringify(got)}`,
    );
  }
  const burnClaims = claims.filter((c) => c.at <= burnEnd);
  console.log(`claims after acks: ${txns}, acks in them: ${fusedAcks}`);
  console.log(
    `\nburn-down claims: ${burnClaims.length}; ms p50 ${pct(
      burnClaims.map((c) => c.ms),
      50,
    ).toFixed(1)} p99 ${pct(
      burnClaims.map((c) => c.ms),
      99,
    ).toFixed(1)}`,
  );
  const ws = writes.filter((w) => w.at <= burnEnd);
  const kinds = [...new Set(ws.map((w) => w.kind))];
  for (const kind of kinds) {
    const xs = ws.filter((w) => w.kind === kind).map((w) => w.ms);
    console.log(`  write ${kind}: ${xs.length}, ms p50 ${pct(xs, 50).toFixed(1)} p99 ${pct(xs, 99).toFixed(1)}`);
  }
  console.log("burn-down claims:");
  for (const c of burnClaims.slice(0, Number(process.env.CLAIMS ?? 30)))
    console.log(
      `  @${c.at.toFixed(0)} ${c.ms.toFixed(1)}ms limit ${c.limit} start ${c.start} busy ${c.busy} buf ${c.buffered} got ${JSON.stringify(c.got)} bounds ${c.bounds.join(",")}`,
    );
  // Gaps between claims with free slots.
  const lats = startLat.map((s) => s.ms);
  console.log(
    `\narrivals: ${sent} at ${rate}/s; enqueue→start p50 ${pct(lats, 50).toFixed(1)} p99 ${pct(lats, 99).toFixed(1)} max ${pct(lats, 100).toFixed(1)}`,
  );
  for (const q of REALISTIC_QUEUES) {
    const xs = startLat.filter((s) => s.q === q.id).map((s) => s.ms);
    console.log(`  ${q.id}: n ${xs.length} p50 ${pct(xs, 50).toFixed(1)} p99 ${pct(xs, 99).toFixed(1)} max ${pct(xs, 100).toFixed(1)}`);
  }
  const slow = startLat.filter((s) => s.ms > 200).slice(0, 20);
  for (const s of slow) console.log(`  slow: ${s.q} ${s.ms.toFixed(0)} ms, started @${s.at.toFixed(0)}`);
  const ac = claims.filter((c) => c.at > burnEnd);
  console.log(
    `arrival claims: ${ac.length}; ms p50 ${pct(
      ac.map((c) => c.ms),
      50,
    ).toFixed(1)} p99 ${pct(
      ac.map((c) => c.ms),
      99,
    ).toFixed(1)}`,
  );
  if (process.env.CLAIMLOG)
    for (const c of ac)
      console.log(
        `  @${c.at.toFixed(0)} ${c.ms.toFixed(1)}ms limit ${c.limit} busy ${c.busy} buf ${c.buffered} got ${JSON.stringify(c.got)} bounds ${c.bounds.join(",")}`,
      );
  await producer.end();
  await pool.end();
} finally {
  await db.drop();
}
