import { setTimeout as sleep } from "node:timers/promises";
import { controlPlane } from "@porter/core/testing/control-plane-factory";
import { createPool } from "@porter/db/pool";
import { useTestDatabase } from "@porter/db/testing/test-database";
import { defineHandler } from "@porter/sdk";
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHandlerMap } from "../handlers/handler-map";
import { createLogger } from "../logger";
import { enqueue, waitForStates } from "../testing/fixtures";
import { PorterWorker } from "./worker";

// Issue 15, scenario (i): a prefetched job of a capped queue holds room under the cap while it waits
// in the buffer (it is RUNNING), so every other job of that queue waits for it too. When the claim
// named the cap as its bound (work left behind), the buffer starts that job before the others.
const testDb = useTestDatabase();
const logger = createLogger({ level: process.env.PORTER_TEST_LOG_LEVEL ?? "silent" });
let db: pg.Pool;

beforeAll(async () => {
  db = createPool(testDb.appConnectionString, { max: 8 });
  await controlPlane(db, {
    pool: { id: "bf-pool" },
    queues: [{ id: "capped", concurrency_cap: 1 }, { id: "free" }],
    jobTypes: [
      { id: "bf.capped", queue: "capped" },
      { id: "bf.free", queue: "free" },
    ],
    tenants: ["tenant_A"],
  });
});

afterAll(async () => {
  await db.end();
});

describe("the prefetch buffer", () => {
  it("starts a buffered job under its claim's bound before the other buffered jobs", async () => {
    const started: string[] = [];
    const run = (type: string) => async () => {
      started.push(type);
      await sleep(40);
      return null;
    };
    const worker = await PorterWorker.start({
      db,
      connectionString: testDb.appConnectionString,
      poolId: "bf-pool",
      logger,
      concurrency: 2,
      prefetch: 10,
      pollIntervalMs: 60_000,
      disconnectedPollIntervalMs: 60_000,
      maintenance: false,
      handlers: createHandlerMap([defineHandler({ type: "bf.capped", run: run("capped") }), defineHandler({ type: "bf.free", run: run("free") })]),
    });
    try {
      await sleep(300);
      // One claim takes all six free jobs (higher priority: first in claim order, two started at
      // once, four buffered) and one capped job (its cap is 1; the second is left behind: the
      // claim's bound), buffered last in claim order.
      const ids = await enqueue(db, [
        ...Array.from({ length: 6 }, () => ({ type: "bf.free", payload: {}, priority: 5 })),
        ...Array.from({ length: 2 }, () => ({ type: "bf.capped", payload: {}, priority: 0 })),
      ]);
      await waitForStates(db, ids, ["SUCCEEDED"], 20_000);
      expect(started.slice(0, 2)).toEqual(["free", "free"]);
      // The capped job goes into the first slot that frees, ahead of the four buffered free jobs.
      expect(started[2]).toBe("capped");
      expect(started.filter((t) => t === "capped")).toHaveLength(2);
    } finally {
      await worker.drain({ graceMs: 0 });
    }
  });
});
