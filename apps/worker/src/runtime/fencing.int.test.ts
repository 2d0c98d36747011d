import { applyEffect, completeJobs, extendLeases, failJobs, StaleLeaseError } from "@porter/core";
import { createPool } from "@porter/db/pool";
import { useTestDatabase } from "@porter/db/testing/test-database";
import { defineHandler } from "@porter/sdk";
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHandlerMap } from "../handlers/handler-map";
import { createLogger } from "../logger";
import { attemptsOf, createDiagPlane, enqueue, jobRow, waitFor, waitForStates } from "../testing/fixtures";
import { PorterWorker } from "./worker";

const testDb = useTestDatabase();
let db: pg.Pool;

// A handler that ignores its signal, then — long after the worker gave up on it — tries to act.
let release: () => void = () => undefined;
const gate = new Promise<void>((resolve) => (release = resolve));
const lateCalls: Record<string, string> = {};
const zombie = defineHandler({
  type: "test.zombie",
  run: async (_job, ctx) => {
    await gate;
    await ctx
      .effect("zombie-effect", async (tx) => tx.query(`INSERT INTO diag_effects (key, applied) VALUES ('zombie', 1)`))
      .catch((error: Error) => (lateCalls.effect = error.name));
    await ctx.heartbeat().catch((error: Error) => (lateCalls.heartbeat = error.name));
    return { late: true };
  },
});

beforeAll(async () => {
  db = createPool(testDb.appConnectionString, { max: 8 });
  await createDiagPlane(db);
  await db.query(`INSERT INTO job_types (id, queue_id) VALUES ('test.zombie', 'diag')`);
});

afterAll(async () => {
  await db.end();
});

describe("fencing of an abandoned attempt", () => {
  it("after a timeout is recorded, the old attempt's effect, heartbeat, ack and nack change nothing", async () => {
    const logger = createLogger({ level: process.env.PORTER_TEST_LOG_LEVEL ?? "silent" });
    const worker = await PorterWorker.start({
      db,
      connectionString: testDb.appConnectionString,
      poolId: "diag-pool",
      logger,
      concurrency: 1,
      hangGraceMs: 200,
      handlers: createHandlerMap([zombie]),
    });
    try {
      const [id] = await enqueue(db, [{ type: "test.zombie", payload: {}, timeoutS: 1, maxAttempts: 1 }]);
      await waitForStates(db, [id!], ["DEAD"]);
      const [attempt] = await attemptsOf(db, id!);
      expect(attempt).toMatchObject({ outcome: "timed_out", error: { code: "TIMEOUT" } });
      const before = await jobRow(db, id!);

      // The zombie wakes up: the worker refuses its calls and drops its result.
      release();
      await waitFor("the zombie's late calls", () => (lateCalls.effect && lateCalls.heartbeat ? true : undefined));
      expect(lateCalls).toEqual({ effect: "AttemptClosedError", heartbeat: "AttemptClosedError" });
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(await jobRow(db, id!)).toEqual(before);

      // And the database refuses the old token outright.
      const { rows } = await db.query<{ id: string; token: string }>(`SELECT id::text, lease_token::text AS token FROM job_attempts WHERE job_id = $1`, [id]);
      const stale = {
        id: (await db.query<{ id: string }>(`SELECT id::text FROM finished_jobs WHERE job_id = $1`, [id])).rows[0]!.id,
        leaseToken: rows[0]!.token,
        attempt: 1,
      };
      expect(await completeJobs(db, [{ ...stale, result: { late: true } }])).toEqual({ completed: [], stale: [stale.id], handedOver: [] });
      expect(await extendLeases(db, [stale])).toEqual({ extended: [], lost: [stale.id] });
      expect(
        await failJobs(db, [
          {
            ...stale,
            outcome: "failed",
            error: { code: "X", class: "retryable", message: "late", worker_version: null, attempt: 1, trace_id: "t", last_checkpoint: null },
            next: { state: "RETRY_WAIT", runAt: new Date() },
          },
        ]),
      ).toEqual({ applied: [], stale: [stale.id] });
      await expect(
        applyEffect(db, { id: stale.id, jobId: id!, tenantId: "tenant_A", attempt: 1, leaseToken: stale.leaseToken }, "zombie-effect", async () => 1),
      ).rejects.toBeInstanceOf(StaleLeaseError);
      expect(await jobRow(db, id!)).toEqual(before);
      expect((await db.query(`SELECT 1 FROM job_effects WHERE key = 'zombie-effect'`)).rowCount).toBe(0);
      expect((await db.query(`SELECT 1 FROM diag_effects WHERE key = 'zombie'`)).rowCount).toBe(0);
      expect(await attemptsOf(db, id!)).toHaveLength(1);
    } finally {
      await worker.drain({ graceMs: 0 });
    }
  });
});
