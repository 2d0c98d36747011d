// Probe (not part of the suite): claim+ack cycles against porter_perf, one claimer.

import { claimJobs, completeJobs } from "@porter/core";
import pg from "pg";

const pool = new pg.Pool({ connectionString: "postgres://postgres@127.0.0.1:5432/porter_perf", max: 4 });
const batch = Number(process.argv[2] ?? 100);
const total = Number(process.argv[3] ?? 20000);
let done = 0,
  claimMs = 0,
  ackMs = 0;
const t0 = performance.now();
while (done < total) {
  const a = performance.now();
  const jobs = await claimJobs(pool, { poolId: "bench", workerId: "p", limit: batch });
  const b = performance.now();
  if (!jobs.length) break;
  await completeJobs(
    pool,
    jobs.map((j) => ({ id: j.id, leaseToken: j.leaseToken, attempt: j.attempt, result: null })),
  );
  ackMs += performance.now() - b;
  claimMs += b - a;
  done += jobs.length;
}
const s = (performance.now() - t0) / 1000;
console.log(
  `batch ${batch}: ${done} jobs in ${s.toFixed(2)}s = ${(done / s).toFixed(0)} jobs/s; claim ${(claimMs / (done / batch)).toFixed(2)} ms/call, ack ${(ackMs / (done / batch)).toFixed(2)} ms/call`,
);
await pool.end();
