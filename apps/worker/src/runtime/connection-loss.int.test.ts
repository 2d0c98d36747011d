import { createPool } from "@porter/db/pool";
import { useTestDatabase } from "@porter/db/testing/test-database";
import { type AnyHandler, defineHandler } from "@porter/sdk";
import type pg from "pg";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createHandlerMap, diagHandlers } from "../handlers";
import { createLogger } from "../logger";
import { attemptsOf, createDiagPlane, enqueue, jobRow, waitFor, waitForStates } from "../testing/fixtures";
import { isConnectionError } from "./errors";
import { PorterWorker } from "./worker";

// Issue 9, defect 12: a client checked out of the pool for an effect's transaction had no error
// listener, so PostgreSQL dropping its connection (a restart, pg_terminate_backend) crashed the
// worker with an unhandled 'error' event. Now the effect fails with a connection error, the
// attempt is recorded as a retryable failure, and the job succeeds on its next attempt.

const testDb = useTestDatabase();
let db: pg.Pool;
const uncaught: unknown[] = [];
const onUncaught = (error: unknown) => uncaught.push(error);

const deferred = <T>() => {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
};
let backend = deferred<number>();
let gate = deferred<void>();

/** An effect whose first attempt holds its transaction open (idle, or in a long statement) until the test lets it go on. */
const gated = defineHandler({
  type: "test.gated_effect",
  run: async (job, ctx) => {
    const { key, mode, txOnly } = job.payload as { key: string; mode: "idle" | "busy"; txOnly: boolean };
    const applied = await ctx.effect(
      key,
      async (tx) => {
        if (job.attempt === 1) {
          const { rows } = await tx.query<{ pid: number }>(`SELECT pg_backend_pid() AS pid`);
          backend.resolve(rows[0]!.pid);
          if (mode === "busy") await tx.query(`SELECT pg_sleep(30)`);
          else await gate.promise;
        }
        const { rows } = await tx.query<{ applied: number }>(
          `INSERT INTO diag_effects (key, applied) VALUES ($1, 1)
         ON CONFLICT (key) DO UPDATE SET applied = diag_effects.applied + 1 RETURNING applied`,
          [key],
        );
        return rows[0]!.applied;
      },
      { txOnly },
    );
    return { applied };
  },
});

/** The same effect as one statement: its first attempt's statement sleeps until its backend is terminated. */
const gatedStatement = defineHandler({
  type: "test.gated_statement",
  run: async (job, ctx) => {
    const { key } = job.payload as { key: string };
    const { rows } = await ctx.effect<{ applied: number }>(key, {
      text: `INSERT INTO diag_effects (key, applied) SELECT $1, 1 FROM pg_sleep($2)
             ON CONFLICT (key) DO UPDATE SET applied = diag_effects.applied + 1 RETURNING applied`,
      values: [key, job.attempt === 1 ? 30 : 0],
    });
    return { applied: rows[0]?.applied ?? null };
  },
});

const terminate = async (pid: number) => {
  await db.query(`SELECT pg_terminate_backend($1)`, [pid]);
  await waitFor("the backend to exit", async () => (await db.query(`SELECT 1 FROM pg_stat_activity WHERE pid = $1`, [pid])).rowCount === 0);
};

beforeAll(async () => {
  process.on("uncaughtException", onUncaught);
  db = createPool(testDb.connectionString, { max: 4 });
  await createDiagPlane(db, { queue: { backoff_base_ms: 10 } });
  await db.query(`INSERT INTO job_types (id, queue_id) VALUES ('test.gated_effect', 'diag'), ('test.gated_statement', 'diag')`);
});

afterEach(() => {
  backend = deferred<number>();
  gate = deferred<void>();
});

afterAll(async () => {
  process.removeListener("uncaughtException", onUncaught);
  await db.end();
});

/** A worker on a pool of its own (`porter-worker:test`) running the diag handlers and `handler`. */
const startWorker = async (handler: AnyHandler) => {
  const workerPool = createPool(testDb.connectionString, { max: 4, applicationName: "porter-worker:test" });
  const worker = await PorterWorker.start({
    db: workerPool,
    connectionString: testDb.connectionString,
    poolId: "diag-pool",
    logger: createLogger({ level: process.env.PORTER_TEST_LOG_LEVEL ?? "silent" }),
    concurrency: 2,
    maintenance: false,
    handlers: createHandlerMap([...diagHandlers, handler]),
  });
  return {
    stop: async () => {
      await worker.drain({ graceMs: 0 });
      await workerPool.end();
    },
  };
};

/**
 * The job's first attempt failed retryably with a connection error and its second succeeded; the
 * effect, rolled back with its transaction the first time, applied once in all; nothing went
 * uncaught, and the worker goes on with new work on the same pool.
 */
const expectRetriedOnce = async (id: string, key: string) => {
  await waitForStates(db, [id], ["SUCCEEDED"]);
  expect(uncaught).toEqual([]);
  expect(await jobRow(db, id)).toMatchObject({ attempt: 2, result: { applied: 1 } });
  const attempts = await attemptsOf(db, id);
  expect(attempts.map((a) => [a.attempt, a.outcome])).toEqual([
    [1, "failed"],
    [2, "succeeded"],
  ]);
  expect(attempts[0]!.error).toMatchObject({ class: "retryable" });
  const { code, message } = attempts[0]!.error!;
  expect(isConnectionError(Object.assign(new Error(message), code === "UNKNOWN" ? {} : { code }))).toBe(true);
  expect((await db.query(`SELECT applied FROM diag_effects WHERE key = $1`, [key])).rows).toEqual([{ applied: 1 }]);
  expect((await db.query(`SELECT attempt FROM job_effects WHERE key = $1`, [key])).rows).toEqual([{ attempt: 2 }]);
  const [next] = await enqueue(db, [{ type: "diag.sleep", payload: { ms: 1 } }]);
  await waitForStates(db, [next!], ["SUCCEEDED"]);
};

describe("a worker whose effect's connection dies", () => {
  // txOnly: the effect's statements pipelined (pg's pipeline mode) when the connection dies.
  it.each([
    ["idle", false],
    ["busy", false],
    ["idle", true],
    ["busy", true],
  ] as const)("survives it (%s in the effect's transaction, txOnly %s): the attempt fails retryably and the job succeeds next time", async (mode, txOnly) => {
    const worker = await startWorker(gated);
    try {
      const key = `gated-${mode}${txOnly ? "-tx" : ""}`;
      const [id] = await enqueue(db, [{ type: "test.gated_effect", payload: { key, mode, txOnly } }]);
      await terminate(await backend.promise);
      await new Promise((resolve) => setTimeout(resolve, 200)); // the client sees its socket close
      gate.resolve();
      await expectRetriedOnce(id!, key);
    } finally {
      gate.resolve();
      await worker.stop();
    }
  });

  it("survives it as one statement (the statement running when its connection dies): the attempt fails retryably and the job succeeds next time", async () => {
    const worker = await startWorker(gatedStatement);
    try {
      const key = "gated-statement";
      const [id] = await enqueue(db, [{ type: "test.gated_statement", payload: { key } }]);
      let pid = 0;
      await waitFor("the effect's statement to be running", async () => {
        const { rows } = await db.query<{ pid: number }>(
          `SELECT pid FROM pg_stat_activity WHERE application_name = 'porter-worker:test' AND state = 'active' AND query LIKE '%pg_sleep($2)%'`,
        );
        pid = rows[0]?.pid ?? 0;
        return pid !== 0;
      });
      await terminate(pid);
      await expectRetriedOnce(id!, key);
    } finally {
      await worker.stop();
    }
  });
});
