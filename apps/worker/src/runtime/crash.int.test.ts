import { createPool } from "@porter/db/pool";
import { useTestDatabase } from "@porter/db/testing/test-database";
import type pg from "pg";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { attemptsOf, createDiagPlane, enqueue, jobRow, waitFor, waitForStates } from "../testing/fixtures";
import { killWorker, spawnWorker, type WorkerProcess } from "../testing/worker-process";

const testDb = useTestDatabase();
let db: pg.Pool;
let pool: string;
const spawned: WorkerProcess[] = [];

const startWorker = async () => {
  const worker = spawnWorker({ connectionString: testDb.appConnectionString, pool, args: ["--concurrency", "2"] });
  spawned.push(worker);
  await worker.waitForLog((line) => line.msg === "worker started");
  return worker;
};

const applied = async (key: string) => {
  const { rows } = await db.query<{ applied: number }>(`SELECT applied FROM diag_effects WHERE key = $1`, [key]);
  return rows[0]?.applied ?? 0;
};

const stop = async (worker: WorkerProcess) => {
  worker.child.kill("SIGTERM");
  expect((await worker.exited).code).toBe(0);
};

beforeAll(async () => {
  db = createPool(testDb.appConnectionString, { max: 4 });
  // 2 s leases: a lost worker's jobs are rescued quickly.
  pool = await createDiagPlane(db, { queue: { lease_seconds: 2, backoff_base_ms: 10 } });
});

afterEach(async () => {
  for (const worker of spawned.splice(0)) await killWorker(worker);
});

afterAll(async () => {
  await db.end();
});

describe("crash recovery (SIGKILLed worker process)", () => {
  it("a job killed before its effect is recovered after its lease and applies the effect exactly once", async () => {
    const first = await startWorker();
    const [id] = await enqueue(db, [{ type: "diag.effect", payload: { key: "crash-before-effect", ms: 3_000 } }]);
    await waitForStates(db, [id!], ["RUNNING"]);
    await new Promise((resolve) => setTimeout(resolve, 500));
    first.child.kill("SIGKILL");
    await first.exited;
    expect(await applied("crash-before-effect")).toBe(0);

    const second = await startWorker();
    await waitForStates(db, [id!], ["SUCCEEDED"], 30_000);
    expect(await applied("crash-before-effect")).toBe(1);
    expect(await jobRow(db, id!)).toMatchObject({ attempt: 2, result: { key: "crash-before-effect", applied: 1 } });
    expect((await attemptsOf(db, id!)).map((a) => a.outcome)).toEqual(["lease_expired", "succeeded"]);
    await stop(second);
  });

  it("a job killed after its effect committed is recovered and does not apply the effect again", async () => {
    const first = await startWorker();
    const [id] = await enqueue(db, [{ type: "diag.effect", payload: { key: "crash-after-effect", after_ms: 4_000 } }]);
    await waitFor("the effect to commit", async () => (await applied("crash-after-effect")) === 1);
    first.child.kill("SIGKILL");
    await first.exited;
    expect((await jobRow(db, id!))?.state).toBe("RUNNING");

    const second = await startWorker();
    await waitForStates(db, [id!], ["SUCCEEDED"], 30_000);
    expect(await applied("crash-after-effect")).toBe(1);
    // The second attempt got the ledger's stored result instead of running the effect again.
    expect(await jobRow(db, id!)).toMatchObject({ attempt: 2, result: { key: "crash-after-effect", applied: 1 } });
    const { rows } = await db.query(`SELECT attempt FROM job_effects WHERE key = 'crash-after-effect'`);
    expect(rows).toEqual([{ attempt: 1 }]);
    expect((await attemptsOf(db, id!)).map((a) => a.outcome)).toEqual(["lease_expired", "succeeded"]);
    await stop(second);
  });
});
