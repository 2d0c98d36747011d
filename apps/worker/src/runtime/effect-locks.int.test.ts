import { createPool } from "@porter/db/pool";
import { useTestDatabase } from "@porter/db/testing/test-database";
import { defineHandler, RetryableError } from "@porter/sdk";
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHandlerMap } from "../handlers/handler-map";
import { createLogger } from "../logger";
import { createDiagPlane, enqueue, waitFor, waitForStates } from "../testing/fixtures";
import { PorterWorker } from "./worker";

// ctx.effect against the worker's own batched statements on the job rows — start marks of
// prefetched jobs, acks, failures, lease extensions — on real connections: no deadlock, and each
// effect exactly once. Then fencing: an attempt whose lease moved to another worker while its
// effect ran has that effect refused at commit, and the other worker's attempt applies it once.

const testDb = useTestDatabase();
let db: pg.Pool;

const EFFECT_SQL = `INSERT INTO diag_effects (key, applied) VALUES ($1, 1) ON CONFLICT (key) DO UPDATE SET applied = diag_effects.applied + 1`;

beforeAll(async () => {
  db = createPool(testDb.appConnectionString, { max: 4 });
  await createDiagPlane(db, { workerConcurrency: 64 });
  await db.query(`INSERT INTO job_types (id, queue_id) VALUES ('test.effect', 'diag'), ('test.gated', 'diag')`);
});

afterAll(async () => {
  await db.end();
});

const deadlocks = async (): Promise<number> => {
  const { rows } = await db.query<{ n: string }>(`SELECT deadlocks::text AS n FROM pg_stat_database WHERE datname = current_database()`);
  return Number(rows[0]!.n);
};

/** Waits until no backend of `applicationName` is left: a backend's statistics (deadlocks) are flushed by its exit. */
const backendsGone = (applicationName: string) =>
  waitFor(`the ${applicationName} backends to exit`, async () => {
    const { rows } = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1`, [applicationName]);
    return rows[0]!.n === 0;
  });

describe("ctx.effect and the worker's batches on the same job rows", () => {
  it("many concurrent effects with prefetch, failures and acks: no deadlock, every effect exactly once", async () => {
    const jobs = 1200;
    // A tenth fail their first attempt (a fail batch among the acks), then succeed.
    const handler = defineHandler({
      type: "test.effect",
      run: async (job, ctx) => {
        const n = (job.payload as { n: number }).n;
        if (n % 10 === 0 && job.attempt === 1) throw new RetryableError("transient", { code: "TEST_TRANSIENT" });
        await ctx.effect(`e-${n}`, (tx) => tx.query(EFFECT_SQL, [`e-${n}`]));
        return null;
      },
    });
    await db.query(`UPDATE queues SET backoff_base_ms = 50, backoff_cap_ms = 100 WHERE id = 'diag'`);
    const ids = await enqueue(
      db,
      Array.from({ length: jobs }, (_, n) => ({ type: "test.effect", payload: { n }, maxAttempts: 5 })),
    );
    await pg_stat_flush_wait();
    const before = await deadlocks();
    const logger = createLogger({ level: process.env.PORTER_TEST_LOG_LEVEL ?? "silent" });
    const pools = [0, 1].map(() => createPool(testDb.appConnectionString, { max: 18, applicationName: "effect-locks-worker" }));
    const workers = await Promise.all(
      pools.map((pool) =>
        PorterWorker.start({
          db: pool,
          connectionString: testDb.appConnectionString,
          poolId: "diag-pool",
          logger,
          concurrency: 16,
          handlers: createHandlerMap([handler]),
        }),
      ),
    );
    try {
      await waitForStates(db, ids, ["SUCCEEDED"], 120_000);
    } finally {
      await Promise.all(workers.map((w) => w.drain({ graceMs: 2000 })));
      await Promise.all(pools.map((p) => p.end()));
    }
    await backendsGone("effect-locks-worker");
    expect(await deadlocks()).toBe(before);
    const { rows } = await db.query<{ n: number; once: number; ledger: number }>(
      `SELECT count(*)::int AS n, count(*) FILTER (WHERE applied = 1)::int AS once,
              (SELECT count(*)::int FROM job_effects WHERE key LIKE 'e-%') AS ledger
         FROM diag_effects WHERE key LIKE 'e-%'`,
    );
    expect(rows[0]).toEqual({ n: jobs, once: jobs, ledger: jobs });
  }, 180_000);
});

/** The test's own setup statements' statistics reach pg_stat_database before the first read. */
const pg_stat_flush_wait = () => new Promise((resolve) => setTimeout(resolve, 1100));
