import { createPool } from "@porter/db/pool";
import { useTestDatabase } from "@porter/db/testing/test-database";
import { type AnyHandler, defineHandler, RetryableError } from "@porter/sdk";
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHandlerMap } from "../handlers/handler-map";
import { createLogger } from "../logger";
import { createDiagPlane, enqueue, jobRow, waitFor, waitForStates } from "../testing/fixtures";
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
  // txOnly: fn runs first, the ledger row is claimed in the commit message (porter_effect_close).
  // statement: the statement and porter_effect_close in one message (one implicit transaction).
  it.each([
    { mode: "default", txOnly: false, prefix: "e" },
    { mode: "txOnly", txOnly: true, prefix: "t" },
    { mode: "statement", txOnly: false, prefix: "s" },
  ])(
    "many concurrent effects with prefetch, failures and acks ($mode): no deadlock, every effect exactly once",
    async ({ mode, txOnly, prefix }) => {
      const jobs = 1200;
      // A tenth fail their first attempt (a fail batch among the acks), then succeed.
      const handler = defineHandler({
        type: "test.effect",
        run: async (job, ctx) => {
          const n = (job.payload as { n: number }).n;
          if (n % 10 === 0 && job.attempt === 1) throw new RetryableError("transient", { code: "TEST_TRANSIENT" });
          if (mode === "statement") await ctx.effect(`${prefix}-${n}`, { text: EFFECT_SQL, values: [`${prefix}-${n}`] });
          else await ctx.effect(`${prefix}-${n}`, (tx) => tx.query(EFFECT_SQL, [`${prefix}-${n}`]), { txOnly });
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
              (SELECT count(*)::int FROM job_effects WHERE key LIKE $1) AS ledger
         FROM diag_effects WHERE key LIKE $1`,
        [`${prefix}-%`],
      );
      expect(rows[0]).toEqual({ n: jobs, once: jobs, ledger: jobs });
    },
    180_000,
  );
});

/** A worker of one slot with its own id on `pool`, running `handler` (the fencing cases start two). */
const startOneSlot = (pool: pg.Pool, workerId: string, handler: AnyHandler) =>
  PorterWorker.start({
    db: pool,
    connectionString: testDb.appConnectionString,
    poolId: "diag-pool",
    workerId,
    logger: createLogger({ level: process.env.PORTER_TEST_LOG_LEVEL ?? "silent" }),
    concurrency: 1,
    handlers: createHandlerMap([handler]),
  });

describe("fencing of an effect whose lease moved to another worker while fn ran", () => {
  it.each([
    { mode: "default", txOnly: false, tag: "" },
    { mode: "txOnly", txOnly: true, tag: "-tx" },
  ])(
    "the stale worker's effect is refused at commit (its writes roll back); the new holder applies it once ($mode)",
    async ({ txOnly, tag }) => {
      let release: () => void = () => undefined;
      const gate = new Promise<void>((resolve) => (release = resolve));
      let isInsideA = false;
      const outcomes: Record<string, string> = {};
      const gated = defineHandler({
        type: "test.gated",
        run: async (_job, ctx) => {
          try {
            const result = await ctx.effect(
              `gated-key${tag}`,
              async (tx) => {
                await tx.query(EFFECT_SQL, [`gated${tag}`]);
                if (ctx.workerId === "worker-a") {
                  isInsideA = true;
                  await gate; // the lease moves to worker B meanwhile
                }
                return ctx.workerId;
              },
              { txOnly },
            );
            outcomes[ctx.workerId] = `applied by ${result}`;
          } catch (error) {
            outcomes[ctx.workerId] = (error as Error).name;
            throw error;
          }
          return null;
        },
      });
      // Two workers, each on its own pool (its own connections).
      const poolA = createPool(testDb.appConnectionString, { max: 6 });
      const poolB = createPool(testDb.appConnectionString, { max: 6 });
      const start = (pool: pg.Pool, workerId: string) => startOneSlot(pool, workerId, gated);
      const [id] = await enqueue(db, [{ type: "test.gated", payload: {}, maxAttempts: 3 }]);
      const workerA = await start(poolA, "worker-a");
      let workerB: PorterWorker | undefined;
      try {
        await waitFor("worker A inside the effect's fn", () => isInsideA);
        // Worker A stops with no grace: the job is handed back (its effect's transaction holds no
        // lock on the job row) while fn still runs, and worker B claims it.
        await workerA.drain({ graceMs: 0 });
        workerB = await start(poolB, "worker-b");
        await waitFor("worker B holding the lease", async () => {
          const { rows } = await db.query<{ owner: string }>(`SELECT lease_owner AS owner FROM jobs WHERE job_id = $1 AND state = 'RUNNING'`, [id]);
          return rows[0]?.owner === "worker-b";
        });
        // B waits for A's transaction — until A's fn returns: on the ledger row A claimed (default),
        // or on the row A's fn wrote (txOnly: fn runs first, B's fn writes the same row).
        await new Promise((resolve) => setTimeout(resolve, 300));
        expect(outcomes).toEqual({});
        release();
        await waitForStates(db, [id!], ["SUCCEEDED"]);
        expect(outcomes).toEqual({ "worker-a": "StaleLeaseError", "worker-b": "applied by worker-b" });
        const { rows: effects } = await db.query(`SELECT key, applied FROM diag_effects WHERE key = $1`, [`gated${tag}`]);
        expect(effects).toEqual([{ key: `gated${tag}`, applied: 1 }]);
        const { rows: ledger } = await db.query(`SELECT result FROM job_effects WHERE key = $1`, [`gated-key${tag}`]);
        expect(ledger).toEqual([{ result: "worker-b" }]);
        expect((await jobRow(db, id!))?.state).toBe("SUCCEEDED");
      } finally {
        release();
        await workerB?.drain({ graceMs: 1000 });
        await poolA.end();
        await poolB.end();
      }
    },
    60_000,
  );
});

describe("fencing of a statement effect whose lease moved to another worker while the statement ran", () => {
  it("the stale worker's statement rolls back at its close; the new holder's applies once", async () => {
    // The statement waits on an advisory lock this test holds: worker A's effect is inside its
    // transaction (statement sent, close behind it) while A is drained with no grace and B claims.
    const GATE = 7_331;
    const gated = `INSERT INTO diag_effects (key, applied) SELECT $1, 1 FROM (SELECT pg_advisory_xact_lock(${GATE})) AS gate
                   ON CONFLICT (key) DO UPDATE SET applied = diag_effects.applied + 1`;
    const outcomes: Record<string, string> = {};
    const handler = defineHandler({
      type: "test.gated",
      run: async (_job, ctx) => {
        try {
          const { applied } = await ctx.effect("gated-key-st", { text: gated, values: ["gated-st"] });
          outcomes[ctx.workerId] = applied ? "applied" : "applied before";
        } catch (error) {
          outcomes[ctx.workerId] = (error as Error).name;
          throw error;
        }
        return null;
      },
    });
    const holder = await db.connect();
    await holder.query(`SELECT pg_advisory_lock(${GATE})`);
    const poolA = createPool(testDb.appConnectionString, { max: 6 });
    const poolB = createPool(testDb.appConnectionString, { max: 6 });
    const start = (pool: pg.Pool, workerId: string) => startOneSlot(pool, workerId, handler);
    const waiting = async () => {
      const { rows } = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND objid = $1 AND NOT granted`, [
        GATE,
      ]);
      return rows[0]!.n;
    };
    const [id] = await enqueue(db, [{ type: "test.gated", payload: {}, maxAttempts: 3 }]);
    const workerA = await start(poolA, "worker-a");
    let workerB: PorterWorker | undefined;
    let isGateOpen = false;
    try {
      await waitFor("worker A's statement waiting at the gate", async () => (await waiting()) === 1);
      await workerA.drain({ graceMs: 0 });
      workerB = await start(poolB, "worker-b");
      await waitFor("worker B's statement waiting at the gate too", async () => (await waiting()) === 2);
      expect(outcomes).toEqual({});
      await holder.query(`SELECT pg_advisory_unlock(${GATE})`);
      isGateOpen = true;
      await waitForStates(db, [id!], ["SUCCEEDED"]);
      expect(outcomes).toEqual({ "worker-a": "StaleLeaseError", "worker-b": "applied" });
      const { rows: effects } = await db.query(`SELECT key, applied FROM diag_effects WHERE key = 'gated-st'`);
      expect(effects).toEqual([{ key: "gated-st", applied: 1 }]);
      const { rows: ledger } = await db.query(`SELECT attempt FROM job_effects WHERE key = 'gated-key-st'`);
      expect(ledger).toEqual([{ attempt: 1 }]);
    } finally {
      if (!isGateOpen) await holder.query(`SELECT pg_advisory_unlock(${GATE})`);
      holder.release();
      await workerB?.drain({ graceMs: 1000 });
      await poolA.end();
      await poolB.end();
    }
  }, 60_000);
});

/** The test's own setup statements' statistics reach pg_stat_database before the first read. */
const pg_stat_flush_wait = () => new Promise((resolve) => setTimeout(resolve, 1100));
