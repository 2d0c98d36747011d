// Probe (not part of the suite): EXPLAIN (ANALYZE, BUFFERS) of one enqueue chunk of 250 jobs on a
// fresh `porter_perf` database after `warm` chunks — where the insert statement's time goes, per
// node and trigger, independent of the machine's load (the plan's own timings).
//   [PERF_SERVER=…] [SCHEMA_SQL=…] npx tsx bench/src/probe/enqueue-explain.ts [warm]
import { enqueueJobs, PolicyCache } from "@porter/core";
import { chunkArrays, INSERT_SQL_FOR_PROBES } from "@porter/core/sql/enqueue-insert";
import { prepareEnqueue } from "@porter/core/sql/enqueue-prepare";
import { freshPerfDatabase } from "./perf-db";

const warm = Number(process.argv[2] ?? 40);
const pool = await freshPerfDatabase({ connections: 2 });
if (process.env.SCHEMA_SQL) await pool.query(process.env.SCHEMA_SQL);
const policyCache = new PolicyCache({ ttlMs: 60_000 });
let i = 0;
const make = (n: number) => Array.from({ length: n }, () => ({ job_type: "bench.job", tenant_id: "bench", payload: { k: ++i }, idempotency_key: `k-${i}` }));
for (let w = 0; w < warm; w++) await enqueueJobs(pool, make(250), { policyCache, notify: false });
const now = new Date();
const prepared = await prepareEnqueue(pool, make(250), { now, policyCache });
const cols = chunkArrays(
  prepared,
  prepared.map((_, k) => k),
  now,
);
const client = await pool.connect();
await client.query("BEGIN");
const { rows } = await client.query(`EXPLAIN (ANALYZE, BUFFERS, TIMING) ${INSERT_SQL_FOR_PROBES}`, [...cols, now, []]);
await client.query("ROLLBACK");
console.log(rows.map((r) => r["QUERY PLAN"]).join("\n"));
client.release();
await pool.end();
