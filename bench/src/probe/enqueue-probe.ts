// Probe (not part of the suite): enqueue batches of 1000 against porter_perf.

import { type EnqueueInput, enqueueJobs, PolicyCache } from "@porter/core";
import pg from "pg";

const pool = new pg.Pool({ connectionString: "postgres://postgres@127.0.0.1:5432/porter_perf", max: 4 });
await pool.query("truncate jobs, finished_jobs, idempotency_keys");
const policyCache = new PolicyCache({ ttlMs: 60_000 });
const n = Number(process.argv[2] ?? 50),
  batch = 1000;
let i = 0;
const make = (): EnqueueInput[] =>
  Array.from({ length: batch }, () => ({
    job_type: "bench.noop",
    tenant_id: "bench",
    payload: { i: ++i, source_ref: "s3://bucket/object" },
    idempotency_key: `e-${i}`,
  }));
await enqueueJobs(pool, make(), { policyCache, notify: false });
const t0 = performance.now();
const c0 = process.cpuUsage();
for (let k = 0; k < n; k++) await enqueueJobs(pool, make(), { policyCache, notify: false });
const s = (performance.now() - t0) / 1000;
const c = process.cpuUsage(c0);
console.log(`node cpu per 1000: ${((c.user + c.system) / 1000 / n).toFixed(1)} ms; wall per 1000: ${((s * 1000) / n).toFixed(1)} ms`);
console.log(`enqueue: ${((n * batch) / s).toFixed(0)} jobs/s (batches of ${batch})`);
await pool.end();
