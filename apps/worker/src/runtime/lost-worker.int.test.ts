import { WORKER_LOST_AFTER_MS } from "@porter/core";
import { createPool } from "@porter/db/pool";
import { useTestDatabase } from "@porter/db/testing/test-database";
import type pg from "pg";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../logger";
import { attemptsOf, createDiagPlane, enqueue, jobRow, waitFor, waitForStates } from "../testing/fixtures";
import { killWorker, spawnWorker, type WorkerProcess } from "../testing/worker-process";
import { MaintenanceLeader } from "./maintenance-leader";
import { PorterWorker } from "./worker";

// Issue 9, defect 16: a SIGKILLed worker's prefetched-but-not-started jobs each lost an attempt
// and waited a full lease before rescue. Now the maintenance leader releases a lost worker's jobs
// once its heartbeat row is stale (WORKER_LOST_AFTER_MS), and the prefetched ones keep their attempt.

const testDb = useTestDatabase();
let db: pg.Pool;
let leader: MaintenanceLeader;
const spawned: WorkerProcess[] = [];
const logger = createLogger({ level: process.env.PORTER_TEST_LOG_LEVEL ?? "silent" });

beforeAll(async () => {
  db = createPool(testDb.connectionString, { max: 4 });
  // Leases far longer than the lost threshold: only the worker's liveness can explain a quick rescue.
  await createDiagPlane(db, { queue: { lease_seconds: 300, backoff_base_ms: 10 } });
  leader = new MaintenanceLeader({ connectionString: testDb.connectionString, logger, acquireEveryMs: 200, runEveryMs: 250, vacuumEveryMs: 0 });
  leader.start();
  await waitFor("the maintenance leadership", () => leader.leading);
});

afterEach(async () => {
  for (const worker of spawned.splice(0)) await killWorker(worker);
});

afterAll(async () => {
  await leader.close();
  await db.end();
});

describe("a SIGKILLed worker holding prefetched jobs", () => {
  it("has its jobs READY again within the lost threshold; the prefetched ones keep their attempt, each with a record", async () => {
    // Enqueued first, so the worker's first claim takes all four: one into its single slot, three prefetched.
    const ids = await enqueue(
      db,
      Array.from({ length: 4 }, () => ({ type: "diag.sleep", payload: { ms: 3_000 } })),
    );
    const victim = spawnWorker({
      connectionString: testDb.connectionString,
      pool: "diag-pool",
      args: ["--concurrency", "1", "--prefetch", "3", "--no-maintenance"],
    });
    spawned.push(victim);
    const { workerId } = (await victim.waitForLog((line) => line.msg === "worker started")) as { workerId: string };
    const held = await waitFor("the four jobs claimed by the worker", async () => {
      const { rows } = await db.query<{ job_id: string; is_started: boolean }>(
        `SELECT job_id::text, started_at IS NOT NULL AS is_started FROM jobs WHERE state = 'RUNNING' AND lease_owner = $1`,
        [workerId],
      );
      return rows.length === 4 ? rows : undefined;
    });
    const started = held.filter((r) => r.is_started).map((r) => r.job_id);
    const prefetched = held.filter((r) => !r.is_started).map((r) => r.job_id);
    expect(started).toHaveLength(1);
    expect(prefetched).toHaveLength(3);

    victim.child.kill("SIGKILL");
    const killedAt = (await victim.exited).at;
    await waitForStates(db, ids, ["READY"], WORKER_LOST_AFTER_MS + 10_000);
    // The last heartbeat was at most one interval before the kill; the leader runs every 250 ms.
    expect(Date.now() - killedAt).toBeLessThanOrEqual(WORKER_LOST_AFTER_MS + 2_000);

    expect(await jobRow(db, started[0]!)).toMatchObject({ state: "READY", attempt: 1, error: { code: "WORKER_LOST" } });
    expect((await attemptsOf(db, started[0]!)).map((a) => [a.attempt, a.outcome, a.worker_id])).toEqual([[1, "lease_expired", workerId]]);
    for (const id of prefetched) {
      expect(await jobRow(db, id)).toMatchObject({ state: "READY", attempt: 0 });
      expect((await attemptsOf(db, id)).map((a) => [a.attempt, a.outcome, a.worker_id])).toEqual([[1, "not_started", workerId]]);
    }

    // Another worker runs them: the started one at its second attempt, the prefetched ones at their first.
    const rescuer = await PorterWorker.start({
      db,
      connectionString: testDb.connectionString,
      poolId: "diag-pool",
      logger,
      concurrency: 4,
      maintenance: false,
    });
    try {
      await waitForStates(db, ids, ["SUCCEEDED"], 30_000);
    } finally {
      await rescuer.drain({ graceMs: 0 });
    }
    expect(await jobRow(db, started[0]!)).toMatchObject({ attempt: 2 });
    for (const id of prefetched) {
      expect(await jobRow(db, id)).toMatchObject({ attempt: 1 });
      expect((await attemptsOf(db, id)).map((a) => a.outcome)).toEqual(["not_started", "succeeded"]);
    }
  });
});
