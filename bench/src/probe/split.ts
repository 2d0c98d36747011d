// Probe (not part of the suite): in-process PorterWorker burn-down on a fresh `porter_perf`
// database, with the CPU split between this Node process and PostgreSQL's backends.
//   npx tsx bench/src/probe/split.ts [jobs] [prefetch] [concurrency]
import pg from "pg";
import { migrate } from "@porter/db/migrator";
import { createPool } from "@porter/db/pool";
import { defineHandler } from "@porter/sdk";
import { createHandlerRegistry } from "@porter/worker/handlers/registry";
import { createLogger } from "@porter/worker/logger";
import { PorterWorker } from "@porter/worker/runtime/worker";
import { pgTicks } from "../pg-ticks";

const [jobs, concurrency] = [Number(process.argv[2] ?? 50_000), Number(process.argv[4] ?? 24)];
const prefetch = process.argv[3] === undefined || process.argv[3] === "auto" ? undefined : Number(process.argv[3]);
const admin = "postgres://postgres@127.0.0.1:5432/postgres";
const url = "postgres://postgres@127.0.0.1:5432/porter_perf";

const a = new pg.Client(admin);
await a.connect();
await a.query(`DROP DATABASE IF EXISTS porter_perf WITH (FORCE)`);
await a.query(`CREATE DATABASE porter_perf`);
await a.end();
await migrate(url);
const stats = process.env.STATS === "1";
if (stats) {
  const c = new pg.Client(url);
  await c.connect();
  await c.query(`CREATE EXTENSION IF NOT EXISTS pg_stat_statements`);
  await c.query(`ALTER DATABASE porter_perf SET pg_stat_statements.track = 'all'`);
  await c.end();
}
const pool = createPool(url, { max: concurrency + 2 });
await pool.query(`INSERT INTO pools (id, worker_concurrency) VALUES ('bench', $1)`, [concurrency]);
await pool.query(`INSERT INTO queues (id, pool_id) VALUES ('bench', 'bench')`);
await pool.query(`INSERT INTO job_types (id, queue_id) VALUES ('bench.noop', 'bench')`);
await pool.query(`INSERT INTO tenants (id) VALUES ('t1')`);
await pool.query(
  `INSERT INTO jobs (job_id, job_type, queue_id, tenant_id, payload, priority, idempotency_key, state,
                     max_attempts, timeout_s, run_at, trace_id, vft)
   SELECT gen_random_uuid(), 'bench.noop', 'bench', 't1', jsonb_build_object('k', g), 50, 'k-' || g, 'READY',
          5, 300, now() - interval '1 hour', md5(g::text), g
     FROM generate_series(1, $1) g`,
  [jobs],
);
await pool.query(`VACUUM ANALYZE jobs`);
if (stats) await pool.query(`SELECT pg_stat_statements_reset()`);
const profiler = process.env.PROFILE ? new (await import("node:inspector/promises")).Session() : undefined;
if (profiler) {
  profiler.connect();
  await profiler.post("Profiler.enable");
  await profiler.post("Profiler.start");
}
const ticks0 = pgTicks();
const cpu0 = process.cpuUsage();
const t0 = performance.now();
let ran = 0;
const worker = await PorterWorker.start({
  db: pool, connectionString: url, poolId: "bench", concurrency, prefetch, logger: createLogger({ level: "warn" }),
  handlers: createHandlerRegistry([defineHandler({ type: "bench.noop", run: async () => void (ran += 1) })]), maintenance: false,
});
while (ran < jobs) await new Promise((r) => setTimeout(r, 5));
await worker.drain({ graceMs: 100 });
const s = (performance.now() - t0) / 1000;
const cpu = process.cpuUsage(cpu0);
if (profiler) {
  const { profile } = await profiler.post("Profiler.stop");
  (await import("node:fs")).writeFileSync(process.env.PROFILE!, JSON.stringify(profile));
}
const pgS = (pgTicks() - ticks0) / 100;
const nodeS = (cpu.user + cpu.system) / 1e6;
const left = (await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM jobs`)).rows[0]!.n;
if (left !== 0) throw new Error(`${left} jobs left in the hot table`);
console.log(
  `jobs=${jobs} prefetch=${prefetch} c=${concurrency}: ${(jobs / s).toFixed(0)} jobs/s in ${s.toFixed(2)} s; ` +
    `CPU node ${nodeS.toFixed(2)} s (${((nodeS / jobs) * 1e6).toFixed(1)} µs/job), postgres ${pgS.toFixed(2)} s (${((pgS / jobs) * 1e6).toFixed(1)} µs/job)`,
);

if (stats) {
  const { rows } = await pool.query(
    `SELECT calls, round(total_exec_time::numeric, 1) AS ms, round((total_exec_time / greatest(1, rows))::numeric * 1000, 1) AS us_per_row, rows,
            regexp_replace(left(query, 110), '\\s+', ' ', 'g') AS q
       FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = 'porter_perf')
      ORDER BY calls DESC LIMIT 10`,
  );
  console.table(rows);
}
await pool.end();
