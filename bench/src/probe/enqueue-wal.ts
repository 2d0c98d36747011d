// Probe (not part of the suite): WAL bytes per enqueued job through `enqueueJobs` (calls of 1000 on a
// fresh `porter_perf`), read as pg_current_wal_insert_lsn() before and after. Use a server of one's
// own (PERF_SERVER): the LSN counts every database's writes.
//   PERF_SERVER=… npx tsx bench/src/probe/enqueue-wal.ts [calls] [batch]
import { type EnqueueInput, enqueueJobs, PolicyCache } from "@porter/core";
import { freshPerfDatabase } from "./perf-db";

const [calls, batch] = [Number(process.argv[2] ?? 20), Number(process.argv[3] ?? 1000)];
const pool = await freshPerfDatabase({ connections: 2 });
const policyCache = new PolicyCache({ ttlMs: 60_000 });
let i = 0;
const make = (): EnqueueInput[] =>
  Array.from({ length: batch }, () => ({ job_type: "bench.job", tenant_id: "bench", payload: { k: ++i }, idempotency_key: `k-${i}` }));
for (let w = 0; w < 3; w++) await enqueueJobs(pool, make(), { policyCache });
const lsn = async () => (await pool.query<{ l: string }>(`SELECT pg_current_wal_insert_lsn()::text AS l`)).rows[0]!.l;
const before = await lsn();
for (let k = 0; k < calls; k++) await enqueueJobs(pool, make(), { policyCache });
const after = await lsn();
const { rows } = await pool.query<{ b: string }>(`SELECT pg_wal_lsn_diff($1::pg_lsn, $2::pg_lsn)::text AS b`, [after, before]);
console.log(`${calls} calls of ${batch}: ${(Number(rows[0]!.b) / (calls * batch)).toFixed(0)} B of WAL per job`);
await pool.end();
