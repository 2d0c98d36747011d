// How many connections one worker process holds: a real `startWorker` (what porter-worker runs)
// drains a backlog on a cluster of its own while pg_stat_activity is sampled every 20 ms.
//   npm run connections -w @porter/bench -- [--jobs 5000] [--concurrency 24]
// Three backlogs in turn: no-op jobs (diag.sleep 0 ms), 50 ms jobs (every slot busy), and jobs that
// apply one effect each through ctx.effect (diag.effect: a transaction per effect).
import { parseArgs } from "node:util";
import { enqueueJobs } from "@porter/core";
import { createPool } from "@porter/db/pool";
import { startRestartableCluster } from "@porter/db/testing/restartable-cluster";
import { createLogger, startWorker } from "@porter/worker";

const { values } = parseArgs({ options: { jobs: { type: "string", default: "5000" }, concurrency: { type: "string", default: "24" } } });
const jobs = Number(values.jobs);
const concurrency = Number(values.concurrency);

const cluster = await startRestartableCluster({ database: "connections", isMigrated: true });
const db = createPool(cluster.connectionString, { max: 4 });
await db.query(`INSERT INTO pools (id, worker_concurrency) VALUES ('bench', $1)`, [concurrency]);
await db.query(`INSERT INTO queues (id, pool_id) VALUES ('bench', 'bench')`);
await db.query(`INSERT INTO job_types (id, queue_id) VALUES ('diag.sleep', 'bench'), ('diag.effect', 'bench')`);
await db.query(`INSERT INTO tenants (id) VALUES ('bench')`);

const variants = [
  { name: "no-op (diag.sleep 0 ms)", type: "diag.sleep", payload: (_: number) => ({ ms: 0 }) },
  { name: "50 ms each (diag.sleep 50 ms)", type: "diag.sleep", payload: (_: number) => ({ ms: 50 }) },
  { name: "one ctx.effect each (diag.effect)", type: "diag.effect", payload: (i: number) => ({ key: `k-${i}` }) },
];
let n = 0;
console.log(`| backlog | jobs | worker connections: max / median while draining | by role at the max |`);
console.log(`|---|---|---|---|`);
for (const v of variants) {
  const count = v.type === "diag.sleep" && v.name.includes("50") ? Math.min(jobs, 1000) : jobs;
  for (let i = 0; i < count; i += 1000) {
    const batch = Array.from({ length: Math.min(1000, count - i) }, () => ({
      job_type: v.type,
      tenant_id: "bench",
      payload: v.payload(++n),
      idempotency_key: `c-${n}`,
    }));
    await enqueueJobs(db, batch);
  }
  const worker = await startWorker({ connectionString: cluster.connectionString, pool: "bench", concurrency, logger: createLogger({ level: "error" }) });
  const samples: number[] = [];
  let peak: Record<string, number> = {};
  for (;;) {
    const { rows } = await db.query<{ app: string; n: number; left: number }>(
      `SELECT application_name AS app, count(*)::int AS n, (SELECT count(*)::int FROM jobs) AS left
         FROM pg_stat_activity WHERE application_name LIKE 'porter-worker%' GROUP BY 1`,
    );
    const total = rows.reduce((a, r) => a + r.n, 0);
    samples.push(total);
    if (total >= Math.max(...samples)) peak = Object.fromEntries(rows.map((r) => [r.app, r.n]));
    const left = rows[0]?.left ?? Number((await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM jobs`)).rows[0]!.n);
    if (left === 0) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  await worker.drain();
  const sorted = [...samples].sort((a, b) => a - b);
  console.log(
    `| ${v.name} | ${count} | ${Math.max(...samples)} / ${sorted[Math.floor(sorted.length / 2)]} | ${Object.entries(peak)
      .map(([k, c]) => `${k} ${c}`)
      .join(", ")} |`,
  );
}
console.log(`\nconcurrency ${concurrency}: the worker's pool max is min(concurrency + 6, 40) = ${Math.min(concurrency + 6, 40)}, plus LISTEN and maintenance.`);
await db.end();
await cluster.stop();
