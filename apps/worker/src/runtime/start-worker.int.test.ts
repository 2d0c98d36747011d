// Issue 11, point 1: `startWorker` runs a worker inside the caller's process (the library entry
// point): the user's handlers next to the built-in ones, `drain()` stops it, no signal handlers.
import { DIAG_JOB_TYPES } from "@porter/contracts";
import { controlPlane } from "@porter/core/testing/control-plane-factory";
import { createPool } from "@porter/db/pool";
import { useTestDatabase } from "@porter/db/testing/test-database";
import { defineHandler } from "@porter/sdk";
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { HandlerSetupError } from "../handlers/own-handlers";
import { createLogger } from "../logger";
import { enqueue, jobRow, waitFor, waitForStates } from "../testing/fixtures";
import { startWorker } from "./start-worker";

const testDb = useTestDatabase();
let db: pg.Pool;
const logger = createLogger({ level: "silent" });

const greet = defineHandler({
  type: "lib.greet",
  payload: z.object({ name: z.string() }),
  run: async (job, ctx) => {
    await new Promise((resolve) => setTimeout(resolve, 200));
    return { greeting: `hello ${job.payload.name}`, attempt: ctx.attempt };
  },
});

beforeAll(async () => {
  db = createPool(testDb.appConnectionString, { max: 4 });
  await controlPlane(db, {
    pool: "lib-pool",
    queues: [{ id: "lib" }],
    jobTypes: [...DIAG_JOB_TYPES, "lib.greet"].map((id) => ({ id, queue: "lib" })),
    tenants: ["tenant_A"],
  });
  await controlPlane(db, { pool: "lib-other", queues: [{ id: "lib-other" }], jobTypes: [{ id: "lib.elsewhere", queue: "lib-other" }], tenants: ["tenant_A"] });
});

afterAll(async () => {
  await db.end();
});

describe("startWorker", () => {
  it("runs the given handlers to SUCCEEDED, and drain() stops it: worker row stopped, connections closed, no signal handlers", async () => {
    const sigterms = process.listenerCount("SIGTERM");
    const worker = await startWorker({ connectionString: testDb.appConnectionString, pool: "lib-pool", handlers: [greet], concurrency: 2, logger });
    expect(process.listenerCount("SIGTERM")).toBe(sigterms);
    expect(worker.concurrency).toBe(2);
    const ids = await enqueue(db, [
      { type: "lib.greet", payload: { name: "ada" } },
      { type: "diag.sleep", payload: { ms: 1 } },
    ]);
    await waitForStates(db, ids, ["SUCCEEDED"]);
    expect((await jobRow(db, ids[0]!))?.result).toEqual({ greeting: "hello ada", attempt: 1 });

    // A job in flight when drain() is called finishes within the grace period.
    const [inFlight] = await enqueue(db, [{ type: "lib.greet", payload: { name: "bob" } }]);
    await waitFor("the job to run", () => worker.running === 1);
    const report = await worker.drain();
    expect(report.finishedInGrace).toBe(true);
    expect((await jobRow(db, inFlight!))?.state).toBe("SUCCEEDED");
    const { rows } = await db.query<{ stopped: boolean }>(`SELECT stopped_at IS NOT NULL AS stopped FROM workers WHERE id = $1`, [worker.id]);
    expect(rows).toEqual([{ stopped: true }]);
    expect(await worker.drain()).toBe(report);
    const open = async () =>
      (await db.query(`SELECT 1 FROM pg_stat_activity WHERE application_name = 'porter-worker:lib-pool' AND datname = current_database()`)).rowCount;
    await waitFor("the worker's pool connections to close", async () => (await open()) === 0, { timeoutMs: 5_000 });

    // Stopped: nothing claims a new job.
    const [later] = await enqueue(db, [{ type: "lib.greet", payload: { name: "cy" } }]);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect((await jobRow(db, later!))?.state).toBe("READY");
  });

  it("rejects a handler set that cannot run with a HandlerSetupError, registering no worker", async () => {
    const before = (await db.query(`SELECT id FROM workers`)).rowCount;
    const start = (handlers: unknown[]) =>
      startWorker({ connectionString: testDb.appConnectionString, pool: "lib-pool", handlers: handlers as never, logger, maintenance: false });
    const other = defineHandler({ type: "lib.elsewhere", run: async () => ({}) });
    await expect(start([greet, other])).rejects.toThrow(
      new HandlerSetupError(`handler for job type "lib.elsewhere": its queue "lib-other" is in pool "lib-other", not "lib-pool"`),
    );
    await expect(start([defineHandler({ type: "lib.nope", run: async () => ({}) })])).rejects.toBeInstanceOf(HandlerSetupError);
    await expect(start([greet, greet])).rejects.toThrow(`two handlers for job type "lib.greet"`);
    await expect(start([{ type: "lib.greet" }])).rejects.toThrow("handlers[0] is not a handler");
    expect((await db.query(`SELECT id FROM workers`)).rowCount).toBe(before);
  });
});
