import { enqueueJobs, type EnqueueInput } from "@porter/core";
import { createPool } from "@porter/db";
import { defineHandler } from "@porter/sdk";
import { createHandlerRegistry } from "@porter/worker/handlers/registry";
import { createLogger } from "@porter/worker/logger";
import { PorterWorker } from "@porter/worker/runtime/worker";
import { freshPorterDatabase, readStats, type PgStats } from "./database";
import type { Progress } from "./progress";

export type BurnDownResult = {
  jobs: number;
  enqueueJobsPerS: number;
  burnDownJobsPerS: number;
  perJob: { commits: number; walBytes: number; deadTuples: number };
};

const perJob = (before: PgStats, after: PgStats, jobs: number) => ({
  commits: (after.commits - before.commits) / jobs,
  walBytes: (after.walBytes - before.walBytes) / jobs,
  deadTuples: (after.deadTuples - before.deadTuples) / jobs,
});

/**
 * Porter end to end on a fresh database: N no-op jobs enqueued in batches of `batch` through
 * core's enqueue (what producer.enqueueBatch runs), then burned down by one PorterWorker with
 * `concurrency` slots — the real runtime: batched claims, batched acks, heartbeats, LISTEN.
 */
export const porterBurnDown = async (
  adminUrl: string,
  params: { jobs: number; batch: number; concurrency: number; poolSize: number; progress: Progress },
): Promise<BurnDownResult> => {
  const database = await freshPorterDatabase(adminUrl, "porter");
  const pool = createPool(database.url, { max: params.poolSize, applicationName: "porter-bench" });
  try {
    await pool.query(`INSERT INTO pools (id, worker_concurrency) VALUES ('bench', $1)`, [params.concurrency]);
    await pool.query(`INSERT INTO queues (id, pool_id, lease_seconds) VALUES ('bench', 'bench', 60)`);
    await pool.query(`INSERT INTO job_types (id, queue_id) VALUES ('bench.noop', 'bench')`);
    await pool.query(`INSERT INTO tenants (id) VALUES ('bench')`);

    const inputs = (from: number, n: number): EnqueueInput[] =>
      Array.from({ length: n }, (_, i) => ({
        job_type: "bench.noop",
        tenant_id: "bench",
        payload: { i: from + i },
        idempotency_key: `bench-${from + i}`,
      }));
    const t0 = performance.now();
    for (let done = 0; done < params.jobs; done += params.batch) {
      await enqueueJobs(pool, inputs(done, Math.min(params.batch, params.jobs - done)), { notify: false });
      params.progress.update(`porter: enqueued ${Math.min(done + params.batch, params.jobs)}/${params.jobs}`);
    }
    const enqueueS = (performance.now() - t0) / 1000;

    await new Promise((r) => setTimeout(r, 1100)); // let pg_stat counters flush
    const before = await readStats(pool);
    const noop = defineHandler({ type: "bench.noop", run: async () => null });
    const t1 = performance.now();
    const worker = await PorterWorker.start({
      db: pool,
      connectionString: database.url,
      poolId: "bench",
      concurrency: params.concurrency,
      logger: createLogger({ level: "warn" }),
      handlers: createHandlerRegistry([noop]),
      maintenance: false,
    });
    for (;;) {
      const { rows } = await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM jobs`);
      const left = rows[0]!.n;
      params.progress.update(`porter: burn-down ${params.jobs - left}/${params.jobs}`);
      if (left === 0) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const burnS = (performance.now() - t1) / 1000;
    await worker.drain({ graceMs: 1000 });
    await new Promise((r) => setTimeout(r, 1100));
    const after = await readStats(pool);
    const { rows } = await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM finished_jobs WHERE state = 'SUCCEEDED'`);
    if (rows[0]!.n !== params.jobs) throw new Error(`expected ${params.jobs} SUCCEEDED jobs, found ${rows[0]!.n}`);
    return {
      jobs: params.jobs,
      enqueueJobsPerS: params.jobs / enqueueS,
      burnDownJobsPerS: params.jobs / burnS,
      perJob: perJob(before, after, params.jobs),
    };
  } finally {
    await pool.end();
    await database.drop();
  }
};
