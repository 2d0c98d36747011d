// Probe (not part of the suite): sequential enqueue calls of `batch` jobs on a fresh `porter_perf`
// database, with the CPU split between Node and PostgreSQL and pg_stat_statements (STATS=1).
//   [PERF_SERVER=…] [SCHEMA_SQL='DROP INDEX …'] npx tsx bench/src/probe/enqueue-split.ts [calls] [batch]
import { type EnqueueInput, enqueueJobs, PolicyCache } from "@porter/core";
import { pgTicks, postmasterOf } from "../pg-ticks";
import { freshPerfDatabase, startProfile } from "./perf-db";

const [calls, batch] = [Number(process.argv[2] ?? 30), Number(process.argv[3] ?? 1000)];
const stats = process.env.STATS === "1";
const pool = await freshPerfDatabase({ connections: 4, statements: stats });
// SCHEMA_SQL: run on the fresh database first (an experiment: drop an index or a trigger, and see).
if (process.env.SCHEMA_SQL) await pool.query(process.env.SCHEMA_SQL);
const policyCache = new PolicyCache({ ttlMs: 60_000 });
let i = 0;
const make = (): EnqueueInput[] =>
  Array.from({ length: batch }, () => ({ job_type: "bench.job", tenant_id: "bench", payload: { k: ++i }, idempotency_key: `k-${i}` }));
for (let w = 0; w < 3; w++) await enqueueJobs(pool, make(), { policyCache });
if (stats) await pool.query(`SELECT pg_stat_statements_reset()`);
const profile = await startProfile();
// On a server of one's own (PERF_SERVER), only its processes; else every postgres process here.
const postmaster = process.env.PERF_SERVER ? await postmasterOf(pool) : undefined;
const ticks0 = pgTicks(postmaster);
const c0 = process.cpuUsage();
const t0 = performance.now();
for (let k = 0; k < calls; k++) await enqueueJobs(pool, make(), { policyCache });
const s = (performance.now() - t0) / 1000;
const c = process.cpuUsage(c0);
await profile.stop();
const pgS = (pgTicks(postmaster) - ticks0) / 100;
console.log(
  `${calls} calls of ${batch}: ${((calls * batch) / s).toFixed(0)} jobs/s; per call: wall ${((s * 1000) / calls).toFixed(1)} ms, `
    + `node CPU ${((c.user + c.system) / 1000 / calls).toFixed(1)} ms, postgres CPU ${((pgS * 1000) / calls).toFixed(1)} ms`,
);
if (stats) {
  const { rows } = await pool.query(
    `SELECT calls, round(total_exec_time::numeric / calls, 2) AS ms_per_call, regexp_replace(left(query, 100), '\\s+', ' ', 'g') AS q
       FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = 'porter_perf') AND calls >= $1
      ORDER BY total_exec_time DESC LIMIT 8`,
    [calls],
  );
  console.table(rows);
}
await pool.end();
