// Checkpoints survive a SIGKILL of the worker: a real worker process (the worker bin with a
// --handlers module) checkpoints each step of a job and is killed mid-job; the lease rescue takes
// the job back and another worker process resumes it from the last checkpoint.
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
  const worker = spawnWorker({
    connectionString: testDb.appConnectionString,
    pool,
    args: ["--concurrency", "1", "--handlers", "apps/worker/src/testing/handler-modules/resumable.ts"],
  });
  spawned.push(worker);
  await worker.waitForLog((line) => line.msg === "worker started");
  return worker;
};

const checkpointOf = async (jobId: string) =>
  (await db.query<{ checkpoint: { next: number; done_by: number[] } | null }>(`SELECT checkpoint FROM jobs WHERE job_id = $1`, [jobId])).rows[0]?.checkpoint
  ?? null;

beforeAll(async () => {
  db = createPool(testDb.appConnectionString, { max: 4 });
  // 2 s leases: the killed worker's job is rescued quickly.
  pool = await createDiagPlane(db, { queue: { lease_seconds: 2, backoff_base_ms: 10 } });
  await testDb.pool.query(`INSERT INTO job_types (id, queue_id) VALUES ('test.resumable', 'diag')`);
});

afterEach(async () => {
  for (const worker of spawned.splice(0)) await killWorker(worker);
});

afterAll(async () => {
  await db.end();
});

describe("checkpoints and a SIGKILLed worker process", () => {
  it("survive the kill, and the next attempt (another worker) resumes from them", async () => {
    const first = await startWorker();
    const [id] = await enqueue(db, [{ type: "test.resumable", payload: { steps: 12, step_ms: 150 } }]);
    await waitFor("three steps checkpointed", async () => ((await checkpointOf(id!))?.next ?? 0) >= 3);
    first.child.kill("SIGKILL");
    await first.exited;
    const atKill = await checkpointOf(id!);
    expect(atKill!.next).toBeGreaterThanOrEqual(3);
    expect(atKill!.next).toBeLessThan(12);
    expect(atKill!.done_by).toEqual(Array(atKill!.next).fill(1));

    const second = await startWorker();
    await waitForStates(db, [id!], ["SUCCEEDED"], 30_000);
    // The second attempt started where the killed one's last durable checkpoint said, and did only the rest.
    expect(await jobRow(db, id!)).toMatchObject({
      attempt: 2,
      result: { resumed_from: atKill!.next, done_by: [...Array(atKill!.next).fill(1), ...Array(12 - atKill!.next).fill(2)] },
    });
    const attempts = await attemptsOf(db, id!);
    expect(attempts.map((a) => a.outcome)).toEqual(["lease_expired", "succeeded"]);
    // The rescue recorded the checkpoint in the lost attempt's structured error.
    expect(attempts[0]!.error).toMatchObject({ code: "LEASE_EXPIRED", last_checkpoint: atKill });
    const { rows } = await db.query(`SELECT checkpoint, progress FROM finished_jobs WHERE job_id = $1`, [id]);
    expect(rows[0].checkpoint).toMatchObject({ next: 12 });
    second.child.kill("SIGTERM");
    expect((await second.exited).code).toBe(0);
  });
});
