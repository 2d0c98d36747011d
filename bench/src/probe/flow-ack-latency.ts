// Probe (not part of the suite): what the flow CTEs add to one ack statement, robust to a noisy
// machine — one database, batches of ACK (default 40) claimed jobs acked by completeJobs, the ack's
// flow CTEs kept or stripped at the driver (variants alternate per batch, same table state), the
// statement's wall time at the driver (synchronous_commit off: without the WAL flush wait); reports the minimum and the 25th percentile per variant
// (preemption only ever adds time).
//   npx tsx bench/src/probe/flow-ack-latency.ts <batches per variant>
// Variants: flow (as core writes it), nohist (without the histogram CTE), noflow (without any).
import { claimJobs, completeJobs, enqueueJobs } from "@porter/core";
import { migrate } from "@porter/db/migrator";
import { createPool } from "@porter/db/pool";
import pg from "pg";

const DB = process.env.AB_DB ?? "porter_perf_flowack";
const ADMIN = "postgres://postgres@127.0.0.1:5432/postgres";
const URL = `postgres://postgres@127.0.0.1:5432/${DB}`;
const batches = Number(process.argv[2] ?? 300);
const ackBatch = Number(process.env.ACK ?? 40);
const all = ["flow", "nohist", "noflow"] as const;
type Variant = (typeof all)[number];
// ONLY=flow: one variant (e.g. to profile its backend, whose pid is printed).
const variants: readonly Variant[] = process.env.ONLY ? [process.env.ONLY as Variant] : all;
const FLOW_CTE = /,\s*flow\w* AS \(INSERT INTO flow_\w+[\s\S]*?DO UPDATE SET (?:\w+ = flow_\w+\.\w+ \+ EXCLUDED\.\w+(?:, )?)+\s*\)/g;
const rewrite = (text: string, v: Variant) =>
  v === "flow" ? text : text.replace(FLOW_CTE, (cte) => (v === "noflow" || cte.includes("INSERT INTO flow_histograms") ? "" : cte));

const admin = new pg.Client(ADMIN);
await admin.connect();
await admin.query(`DROP DATABASE IF EXISTS ${DB} WITH (FORCE)`);
await admin.query(`CREATE DATABASE ${DB}`);
await migrate(URL);
const seed = createPool(URL, { max: 2 });
await seed.query(`INSERT INTO pools (id, worker_concurrency) VALUES ('bench', 24)`);
await seed.query(`INSERT INTO queues (id, pool_id) VALUES ('bench', 'bench')`);
await seed.query(`INSERT INTO job_types (id, queue_id) VALUES ('bench.job', 'bench')`);
await seed.query(`INSERT INTO tenants (id) VALUES ('bench')`);
const total = batches * variants.length * ackBatch;
for (let i = 0; i < total; i += 1000)
  await enqueueJobs(
    seed,
    Array.from({ length: Math.min(1000, total - i) }, (_, k) => ({
      job_type: "bench.job",
      tenant_id: "bench",
      payload: { k: i + k },
      idempotency_key: `k${i + k}`,
    })),
  );
await seed.query("VACUUM ANALYZE jobs");

// One acking connection per variant: each keeps its own prepared statement (the text differs).
const ackers = new Map<Variant, pg.Client>();
for (const v of variants) {
  const c = new pg.Client(URL);
  await c.connect();
  // No WAL flush wait: the statement's own work only (the flush is the same for every variant).
  await c.query("SET synchronous_commit = off");
  const orig = c.query.bind(c) as (...a: unknown[]) => unknown;
  (c as unknown as { query: unknown }).query = (...args: unknown[]) => {
    const q = args[0] as { text?: string };
    if (typeof q === "object" && q.text?.includes("INSERT INTO flow_")) args[0] = { ...q, text: rewrite(q.text, v) };
    return orig(...args);
  };
  ackers.set(v, c);
  if (process.env.ONLY) {
    console.log(`pid ${(await c.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")).rows[0]!.pid}`);
    await new Promise((r) => setTimeout(r, 3000));
  }
}
const times = new Map<Variant, number[]>(variants.map((v) => [v, []]));
for (let b = 0; b < batches; b++) {
  for (let k = 0; k < variants.length; k++) {
    const v = variants[(b + k) % variants.length]!;
    const claimed = await claimJobs(seed, { poolId: "bench", workerId: "w", limit: ackBatch });
    const t0 = performance.now();
    const out = await completeJobs(
      ackers.get(v)! as unknown as pg.Pool,
      claimed.map((j) => ({ id: j.id, leaseToken: j.leaseToken, attempt: j.attempt, result: null })),
    );
    const dt = performance.now() - t0;
    if (out.completed.length !== claimed.length) throw new Error("stale acks");
    if (b >= 10) times.get(v)!.push(dt * 1000); // the first batches warm the plan caches
  }
}
const q = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.floor(p * (xs.length - 1))]!;
for (const v of variants) {
  const xs = times.get(v)!;
  console.log(`${v}: min ${q(xs, 0).toFixed(0)} µs, p25 ${q(xs, 0.25).toFixed(0)} µs, median ${q(xs, 0.5).toFixed(0)} µs per ack of ${ackBatch}`);
}
for (const c of ackers.values()) await c.end();
await seed.end();
await admin.query(`DROP DATABASE IF EXISTS ${DB} WITH (FORCE)`);
await admin.end();
