// Issue 16, point 3: a worker's connections are bounded and configurable — `poolSize` for the pool,
// plus one LISTEN and one maintenance connection, which `listenConnectionString` can send straight
// to PostgreSQL while the pool goes through a transaction-mode pooler; `preparedStatements: false`
// for a pooler that does not track prepared statements.
import { createPool } from "@porter/db/pool";
import { useTestDatabase } from "@porter/db/testing/test-database";
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../logger";
import { createDiagPlane, enqueue, waitFor, waitForStates } from "../testing/fixtures";
import { spawnWorker } from "../testing/worker-process";
import { defaultPoolSize, MIN_POOL_SIZE, startWorker } from "./start-worker";

const testDb = useTestDatabase();
let db: pg.Pool;
let pool: string;
const logger = createLogger({ level: "silent" });

type Connection = { application_name: string; usename: string };

/** The worker's connections to this database now (the test's own pool is `porter-test`). */
const connections = async (): Promise<Connection[]> =>
  (
    await db.query<Connection>(
      `SELECT application_name, usename FROM pg_stat_activity
        WHERE datname = current_database() AND pid <> pg_backend_pid() AND application_name LIKE 'porter-worker%'`,
    )
  ).rows;

/** Samples the worker's connections every 10 ms until `done` settles; returns the peaks. */
const sampleWhile = async (done: Promise<unknown>) => {
  let isDone = false;
  void done.finally(() => {
    isDone = true;
  });
  let peakPool = 0;
  let peakTotal = 0;
  while (!isDone) {
    const rows = await connections();
    peakPool = Math.max(peakPool, rows.filter((r) => r.application_name === `porter-worker:${pool}`).length);
    peakTotal = Math.max(peakTotal, rows.length);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  await done;
  return { peakPool, peakTotal };
};

beforeAll(async () => {
  db = createPool(testDb.connectionString, { max: 3, applicationName: "porter-test" });
  pool = await createDiagPlane(db, { pool: "budget-pool", workerConcurrency: 16 });
});

afterAll(async () => {
  await db.end();
});

describe("a worker's connection budget", () => {
  it("default pool size: concurrency + 6, at most 40", () => {
    expect(defaultPoolSize(4)).toBe(10);
    expect(defaultPoolSize(undefined)).toBe(26);
    expect(defaultPoolSize(100)).toBe(40);
  });

  it("poolSize bounds the pool: 16 slots of effect jobs never hold more than 3 pooled connections (+ LISTEN + maintenance)", async () => {
    const worker = await startWorker({ connectionString: testDb.appConnectionString, pool, concurrency: 16, poolSize: 3, logger });
    try {
      const ids = await enqueue(
        db,
        Array.from({ length: 120 }, (_, i) => ({ type: "diag.effect", payload: { key: `budget-${i}`, ms: 15 } })),
      );
      const peaks = await sampleWhile(waitForStates(db, ids, ["SUCCEEDED"], 60_000));
      // Without the bound the pool grows to concurrency + 6 = 22 while 16 effects run at once.
      expect(peaks.peakPool).toBeLessThanOrEqual(3);
      expect(peaks.peakPool).toBeGreaterThanOrEqual(2);
      expect(peaks.peakTotal).toBeLessThanOrEqual(3 + 2);
      const { rows } = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM diag_effects WHERE key LIKE 'budget-%' AND applied = 1`);
      expect(rows[0]!.n).toBe(120);
    } finally {
      await worker.drain();
    }
  });

  it(`refuses a poolSize below ${MIN_POOL_SIZE} before it connects`, async () => {
    await expect(startWorker({ connectionString: testDb.appConnectionString, pool, poolSize: 2, logger })).rejects.toThrow(/poolSize must be an integer ≥ 3/);
  });

  it("listenConnectionString: the LISTEN and maintenance connections use it, the pool does not; notifications still wake the worker", async () => {
    // The pool as the runtime role, the session-bound connections as the owner: the role tells them apart.
    const worker = await startWorker({
      connectionString: testDb.appConnectionString,
      listenConnectionString: testDb.connectionString,
      pool,
      concurrency: 2,
      logger,
      maintenance: { acquireEveryMs: 50, runEveryMs: 50 },
    });
    try {
      await waitFor("the LISTEN and maintenance connections", async () => {
        const names = (await connections()).map((c) => c.application_name);
        return names.includes("porter-worker-listen") && names.includes("porter-worker-maintenance");
      });
      const [id] = await enqueue(db, [{ type: "diag.sleep", payload: { ms: 1 } }]);
      await waitForStates(db, [id!], ["SUCCEEDED"]);
      const byName = new Map<string, Set<string>>();
      for (const c of await connections()) byName.set(c.application_name, (byName.get(c.application_name) ?? new Set()).add(c.usename));
      expect(byName.get("porter-worker-listen")).toEqual(new Set(["postgres"]));
      expect(byName.get("porter-worker-maintenance")).toEqual(new Set(["postgres"]));
      expect(byName.get(`porter-worker:${pool}`)).toEqual(new Set(["porter_app"]));
      // The leader's session lock is held on the direct connection.
      const { rows } = await db.query<{ usename: string }>(
        `SELECT a.usename FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
          WHERE l.locktype = 'advisory' AND a.application_name = 'porter-worker-maintenance' AND a.datname = current_database()`,
      );
      expect(rows).toEqual([{ usename: "postgres" }]);
    } finally {
      await worker.drain();
    }
  });

  it("preparedStatements false: claims, starts, effects and acks all run (unnamed), and no job runs twice", async () => {
    const worker = await startWorker({ connectionString: testDb.appConnectionString, pool, concurrency: 8, poolSize: 4, preparedStatements: false, logger });
    try {
      const ids = await enqueue(
        db,
        Array.from({ length: 60 }, (_, i) => ({ type: "diag.effect", payload: { key: `unnamed-${i}`, ms: 2 } })),
      );
      await waitForStates(db, ids, ["SUCCEEDED"], 60_000);
      const { rows } = await db.query<{ n: number; applied: number }>(
        `SELECT count(*)::int AS n, sum(applied)::int AS applied FROM diag_effects WHERE key LIKE 'unnamed-%'`,
      );
      expect(rows[0]).toEqual({ n: 60, applied: 60 });
    } finally {
      await worker.drain();
    }
  });

  it("the porter-worker bin: --db-pool-size and --listen-database-url reach the worker; a pool under 3 or a bad PORTER_PREPARED_STATEMENTS is a usage error", async () => {
    const worker = spawnWorker({
      connectionString: testDb.appConnectionString,
      pool,
      args: ["--concurrency", "8", "--db-pool-size", "3", "--listen-database-url", testDb.connectionString, "--no-prepared-statements"],
      env: { PORTER_APP_DATABASE_URL: testDb.appConnectionString },
    });
    try {
      const started = await worker.waitForLog((line) => line.msg === "worker started", 90_000);
      expect(started).toMatchObject({ concurrency: 8, dbPoolSize: 3, separateListenConnection: true });
      await waitFor("the LISTEN connection", async () => (await connections()).some((c) => c.application_name === "porter-worker-listen"), {
        timeoutMs: 30_000,
      });
      expect((await connections()).find((c) => c.application_name === "porter-worker-listen")?.usename).toBe("postgres");
      const [id] = await enqueue(db, [{ type: "diag.effect", payload: { key: "bin-unnamed", ms: 1 } }]);
      await waitForStates(db, [id!], ["SUCCEEDED"], 30_000);
    } finally {
      worker.child.kill("SIGTERM");
      await worker.exited;
    }

    const small = spawnWorker({ connectionString: testDb.appConnectionString, pool, args: ["--db-pool-size", "2"] });
    expect((await small.exited).code).toBe(2);
    expect(small.output()).toContain('--db-pool-size must be an integer ≥ 3, got "2"');
    const badEnv = spawnWorker({ connectionString: testDb.appConnectionString, pool, env: { PORTER_PREPARED_STATEMENTS: "sometimes" } });
    expect((await badEnv.exited).code).toBe(2);
    expect(badEnv.output()).toContain("PORTER_PREPARED_STATEMENTS");
  }, 180_000);
});
