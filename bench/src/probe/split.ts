// Probe (not part of the suite): in-process PorterWorker burn-down on a fresh `porter_perf`
// database, with the CPU split between this Node process and PostgreSQL's backends.
//   npx tsx bench/src/probe/split.ts [jobs] [prefetch] [concurrency]
import { pgTicks } from "../pg-ticks";
import { startNoOpWorker } from "./no-op-worker";
import { freshPerfDatabase, PERF_URL, startProfile } from "./perf-db";

const [jobs, concurrency] = [Number(process.argv[2] ?? 50_000), Number(process.argv[4] ?? 24)];
const prefetch = process.argv[3] === undefined || process.argv[3] === "auto" ? undefined : Number(process.argv[3]);
const stats = process.env.STATS === "1";
const url = PERF_URL;
const pool = await freshPerfDatabase({ connections: concurrency + 2, workerConcurrency: concurrency, statements: stats });
await pool.query(
  `INSERT INTO jobs (job_id, job_type, queue_id, tenant_id, payload, priority, idempotency_key, state,
                     max_attempts, timeout_s, run_at, trace_id, vft)
   SELECT gen_random_uuid(), 'bench.job', 'bench', 'bench', jsonb_build_object('k', g), 50, 'k-' || g, 'READY',
          5, 300, now() - interval '1 hour', md5(g::text), g
     FROM generate_series(1, $1) g`,
  [jobs],
);
await pool.query(`INSERT INTO fair_clocks (queue_id, tenant_id, last_vft) VALUES ('bench', 'bench', 0)`);
await pool.query(`VACUUM ANALYZE jobs`);
if (process.env.JOBS_RELOPTIONS) await pool.query(`ALTER TABLE jobs SET (${process.env.JOBS_RELOPTIONS})`);
// SETUP_SQL: a schema change to measure (e.g. an index dropped: an upper bound, not a candidate as such).
if (process.env.SETUP_SQL) await pool.query(process.env.SETUP_SQL);
if (stats) await pool.query(`SELECT pg_stat_statements_reset()`);
const profile = await startProfile();
const ticks0 = pgTicks();
const cpu0 = process.cpuUsage();
const t0 = performance.now();
// VACUUM_EVERY_MS: vacuum the hot table that often from a side connection (what maintenance could do).
const vacuumEvery = Number(process.env.VACUUM_EVERY_MS ?? 0);
const vacuumer = vacuumEvery > 0 ? setInterval(() => void pool.query(`VACUUM jobs`).catch(() => undefined), vacuumEvery) : undefined;
let ran = 0;
const worker = await startNoOpWorker({
  db: pool,
  connectionString: url,
  concurrency,
  prefetch,
  onRun: () => {
    ran += 1;
  },
});
while (ran < jobs) await new Promise((r) => setTimeout(r, 5));
await worker.drain({ graceMs: 100 });
clearInterval(vacuumer);
const s = (performance.now() - t0) / 1000;
const cpu = process.cpuUsage(cpu0);
await profile.stop();
const pgS = (pgTicks() - ticks0) / 100;
const nodeS = (cpu.user + cpu.system) / 1e6;
if (process.env.VACUUM_STATS) {
  const { rows } = await pool.query(`SELECT autovacuum_count, autoanalyze_count, n_dead_tup FROM pg_stat_user_tables WHERE relname = 'jobs'`);
  console.log("jobs autovacuum:", rows[0]);
}
const left = (await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM jobs`)).rows[0]!.n;
if (left !== 0) throw new Error(`${left} jobs left in the hot table`);
console.log(
  `jobs=${jobs} prefetch=${prefetch} c=${concurrency}: ${(jobs / s).toFixed(0)} jobs/s in ${s.toFixed(2)} s; `
    + `CPU node ${nodeS.toFixed(2)} s (${((nodeS / jobs) * 1e6).toFixed(1)} µs/job), postgres ${pgS.toFixed(2)} s (${((pgS / jobs) * 1e6).toFixed(1)} µs/job)`,
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
