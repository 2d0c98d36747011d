import type pg from "pg";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createPool, PinnedConnection } from "./pool";
import { useTestDatabase } from "./testing/test-database";

// Issue 15, idle latency: the worker's claim loop and result writer each keep one session, whose
// plans stay warm, instead of landing on whichever pool connection is idle (a cold one compiles
// `porter_claim` again: 30–120 ms). A pinned session that dies is replaced; it never crashes the
// process, and it goes back to the pool so that `pool.end()` does not wait for it.

const testDb = useTestDatabase();
const uncaught: unknown[] = [];
const onUncaught = (error: unknown) => uncaught.push(error);
const pool = () => createPool(testDb.connectionString, { max: 3 });
const pidOn = (pinned: PinnedConnection) => pinned.run(async (client) => (await client.query<{ pid: number }>(`SELECT pg_backend_pid() AS pid`)).rows[0]!.pid);

/** A pool of 3 and a connection pinned from it, both let go after `fn`. */
const withPinned = async (fn: (db: pg.Pool, pinned: PinnedConnection) => Promise<void>): Promise<void> => {
  const db = pool();
  const pinned = new PinnedConnection(db);
  try {
    await fn(db, pinned);
  } finally {
    pinned.release();
    await db.end();
  }
};

const gone = async (pid: number) => {
  for (let i = 0; i < 100; i++) {
    if ((await testDb.pool.query(`SELECT 1 FROM pg_stat_activity WHERE pid = $1`, [pid])).rowCount === 0) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`backend ${pid} did not exit`);
};

beforeAll(() => {
  process.on("uncaughtException", onUncaught);
});

afterAll(() => {
  process.removeListener("uncaughtException", onUncaught);
});

afterEach(() => {
  expect(uncaught).toEqual([]);
});

describe("PinnedConnection", () => {
  it("runs every call on one session, also when the pool's other connections were used in between", () =>
    withPinned(async (db, pinned) => {
      const first = await pidOn(pinned);
      // Other work on the pool, at once: the pool opens more connections, the pinned one is not among them.
      const others = await Promise.all([1, 2].map(() => db.query<{ pid: number }>(`SELECT pg_backend_pid() AS pid, pg_sleep(0.05)`)));
      expect(others.map((r) => r.rows[0]!.pid)).not.toContain(first);
      for (let i = 0; i < 5; i++) expect(await pidOn(pinned)).toBe(first);
    }));

  it("keeps its session after a statement error, and replaces it after the connection died", () =>
    withPinned(async (db, pinned) => {
      const first = await pidOn(pinned);
      await expect(pinned.run((client) => client.query(`SELECT 1 / 0`))).rejects.toMatchObject({ code: "22012" });
      expect(await pidOn(pinned)).toBe(first);

      // Killed while idle: the next call gets a new session.
      await testDb.pool.query(`SELECT pg_terminate_backend($1)`, [first]);
      await gone(first);
      await new Promise((resolve) => setTimeout(resolve, 100)); // the client sees its socket close
      const second = await pidOn(pinned);
      expect(second).not.toBe(first);

      // Killed during a statement: that call fails with the connection's error, the next one runs.
      const sleeping = pinned
        .run((client) => client.query(`SELECT pg_sleep(30)`))
        .then(
          () => null,
          (e: unknown) => e as Error & { code?: string },
        );
      await new Promise((resolve) => setTimeout(resolve, 100));
      await testDb.pool.query(`SELECT pg_terminate_backend($1)`, [second]);
      const error = await sleeping;
      expect(error?.code ?? error?.message).toMatch(/57P01|terminat/);
      await gone(second);
      const third = await pidOn(pinned);
      expect([first, second]).not.toContain(third);
      expect(db.totalCount).toBeLessThanOrEqual(3);
    }));

  it("lends its session to one call at a time: a call meanwhile runs on another connection of the pool", () =>
    withPinned(async (_db, pinned) => {
      const first = await pidOn(pinned);
      const [slow, meanwhile] = await Promise.all([
        pinned.run(async (client) => (await client.query<{ pid: number }>(`SELECT pg_backend_pid() AS pid, pg_sleep(0.1)`)).rows[0]!.pid),
        pinned.run(async (client) => (await client.query<{ pid: number }>(`SELECT pg_backend_pid() AS pid`)).rows[0]!.pid),
      ]);
      expect(slow).toBe(first);
      expect(meanwhile).not.toBe(first);
      expect(await pidOn(pinned)).toBe(first);
    }));

  it("release() returns the session to the pool: pool.end() completes, later calls use the pool", async () => {
    const db = pool();
    const pinned = new PinnedConnection(db);
    await pidOn(pinned);
    expect(db.idleCount).toBe(0);
    pinned.release();
    expect(db.idleCount).toBe(1);
    expect(await pidOn(pinned)).toBeGreaterThan(0);
    expect(db.idleCount).toBe(1);
    const ended = await Promise.race([db.end().then(() => "ended"), new Promise((resolve) => setTimeout(() => resolve("hung"), 5_000))]);
    expect(ended).toBe("ended");
  });
});
