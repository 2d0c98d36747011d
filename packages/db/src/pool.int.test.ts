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

// Issue 16, point 3: behind a transaction-mode pooler (PgBouncer 1.18) a statement prepared on one
// server connection is missing on the next, so `preparedStatements: false` sends named queries unnamed.
describe("createPool's preparedStatements option", () => {
  const preparedOnSameConnection = async (pool: pg.Pool) => {
    const client = await pool.connect();
    try {
      const named = await client.query<{ n: number }>({ name: "porter.pool_test", text: "SELECT $1::int + 1 AS n", values: [41] });
      const again = await client.query<{ n: number }>({ name: "porter.pool_test", text: "SELECT $1::int + 1 AS n", values: [1] });
      const rowMode = await client.query({ name: "porter.pool_test_rows", text: "SELECT 1 AS a, 2 AS b", rowMode: "array" });
      const { rows } = await client.query<{ name: string }>("SELECT name FROM pg_prepared_statements ORDER BY name");
      return { results: [named.rows[0]?.n, again.rows[0]?.n], rowMode: rowMode.rows, prepared: rows.map((r) => r.name) };
    } finally {
      client.release();
    }
  };

  it("by default a named query is prepared once on its connection", async () => {
    const pool = createPool(testDb.connectionString, { max: 1 });
    try {
      expect(await preparedOnSameConnection(pool)).toEqual({ results: [42, 2], rowMode: [[1, 2]], prepared: ["porter.pool_test", "porter.pool_test_rows"] });
    } finally {
      await pool.end();
    }
  });

  it("false: the same queries give the same results and nothing is prepared on the connection", async () => {
    const pool = createPool(testDb.connectionString, { max: 1, preparedStatements: false });
    try {
      expect(await preparedOnSameConnection(pool)).toEqual({ results: [42, 2], rowMode: [[1, 2]], prepared: [] });
      // The pool's own query (pool.query) goes through the same client class.
      await pool.query({ name: "porter.pool_test_direct", text: "SELECT 1" });
      expect((await pool.query("SELECT count(*)::int AS n FROM pg_prepared_statements")).rows).toEqual([{ n: 0 }]);
    } finally {
      await pool.end();
    }
  });
});
