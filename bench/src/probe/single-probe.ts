// Probe: concurrent single enqueues against porter_perf.

import { enqueueJobs, PolicyCache } from "@porter/core";
import pg from "pg";

const c = Number(process.argv[2] ?? 32),
  total = Number(process.argv[3] ?? 2000),
  notify = process.argv[4] !== "nonotify";
const pool = new pg.Pool({ connectionString: "postgres://postgres@127.0.0.1:5432/porter_perf", max: c });
const policyCache = new PolicyCache({ ttlMs: 60_000 });
let i = 0;
const t0 = performance.now();
await Promise.all(
  Array.from({ length: c }, async () => {
    const tenant = process.argv[5] === "spread" ? `b${Math.floor(Math.random() * 32)}` : "bench";
    while (i < total) {
      const k = ++i;
      await enqueueJobs(pool, [{ job_type: "bench.noop", tenant_id: tenant, payload: { k }, idempotency_key: `s-${Date.now()}-${k}` }], {
        policyCache,
        notify,
      });
    }
  }),
);
const s = (performance.now() - t0) / 1000;
console.log(`c=${c} notify=${notify}: ${(total / s).toFixed(0)} jobs/s`);
await pool.end();
