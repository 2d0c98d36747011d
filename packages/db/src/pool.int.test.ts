import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPool, withTransaction } from "./pool";
import { useTestDatabase } from "./testing/test-database";

// Issue 9, defect 12: a client checked out for a transaction had no error listener, so its
// connection dying (PostgreSQL restarting, pg_terminate_backend) crashed the process with an
// unhandled 'error' event. Now the transaction's call fails with the connection error, the broken
// client is destroyed, and the pool serves the next call.

const testDb = useTestDatabase();
const uncaught: unknown[] = [];
const onUncaught = (error: unknown) => uncaught.push(error);

beforeAll(() => {
  process.on("uncaughtException", onUncaught);
});

afterAll(() => {
  process.removeListener("uncaughtException", onUncaught);
});

const gone = async (pid: number) => {
  for (let i = 0; i < 100; i++) {
    if ((await testDb.pool.query(`SELECT 1 FROM pg_stat_activity WHERE pid = $1`, [pid])).rowCount === 0) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`backend ${pid} did not exit`);
};

const pools: Array<[string, () => pg.Pool]> = [
  ["createPool", () => createPool(testDb.connectionString, { max: 2 })],
  // A caller's own pool (say, one handed to startWorker) without Porter's connect hook.
  ["a plain pg.Pool", () => new pg.Pool({ connectionString: testDb.connectionString, max: 2 }).on("error", () => undefined)],
];

describe("withTransaction when the connection dies", () => {
  it.each(pools)("between statements: the call fails with the connection error and the pool goes on (%s)", async (_label, make) => {
    const pool = make();
    try {
      const error = await withTransaction(pool, async (client) => {
        const { rows } = await client.query<{ pid: number }>(`SELECT pg_backend_pid() AS pid`);
        await testDb.pool.query(`SELECT pg_terminate_backend($1)`, [rows[0]!.pid]);
        await gone(rows[0]!.pid);
        await new Promise((resolve) => setTimeout(resolve, 100)); // the client sees its socket close
        await client.query(`SELECT 1`);
      }).then(
        () => null,
        (e: unknown) => e as Error,
      );
      expect(error?.message).toMatch(/not queryable|terminat/);
      expect(uncaught).toEqual([]);
      expect(await withTransaction(pool, async (client) => (await client.query(`SELECT 1 AS one`)).rows)).toEqual([{ one: 1 }]);
      expect(pool.totalCount).toBeLessThanOrEqual(2);
    } finally {
      await pool.end();
    }
  });

  it.each(pools)("during a statement: the call fails with the connection error and the pool goes on (%s)", async (_label, make) => {
    const pool = make();
    try {
      let pid = 0;
      const error = await withTransaction(pool, async (client) => {
        pid = (await client.query<{ pid: number }>(`SELECT pg_backend_pid() AS pid`)).rows[0]!.pid;
        // Settled into a value at once: it fails while the terminate below is being awaited.
        const sleeping = client.query(`SELECT pg_sleep(30)`).then(
          () => undefined,
          (e: unknown) => e,
        );
        await new Promise((resolve) => setTimeout(resolve, 100));
        await testDb.pool.query(`SELECT pg_terminate_backend($1)`, [pid]);
        const failed = await sleeping;
        if (failed) throw failed;
      }).then(
        () => null,
        (e: unknown) => e as Error & { code?: string },
      );
      expect(error?.code ?? error?.message).toMatch(/57P01|terminat/);
      await gone(pid);
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(uncaught).toEqual([]);
      expect(await withTransaction(pool, async (client) => (await client.query(`SELECT 1 AS one`)).rows)).toEqual([{ one: 1 }]);
    } finally {
      await pool.end();
    }
  });
});
