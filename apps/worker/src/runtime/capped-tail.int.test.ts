import { setTimeout as sleep } from "node:timers/promises";
import { controlPlane } from "@porter/core/testing/control-plane-factory";
import { createPool } from "@porter/db/pool";
import { useTestDatabase } from "@porter/db/testing/test-database";
import { defineHandler } from "@porter/sdk";
import type pg from "pg";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createHandlerMap } from "../handlers/handler-map";
import { createLogger } from "../logger";
import { enqueue, isClaim, onEachQuery, waitForStates } from "../testing/fixtures";
import { PorterWorker } from "./worker";

// Issue 15: a capped queue's tail. A claim that a queue cap cuts to zero rows (the queue's slots
// all running) names the cap as its bound, and the worker claims again as soon as one of its own
// jobs of that queue has its result written — not at the next poll (a minute away here). With the
// hand-over (the default), the acks of the queue's jobs claim its next jobs in their own statement
// instead: a round of the queue costs one commit, and the cap stays exact across workers.
const testDb = useTestDatabase();
const logger = createLogger({ level: process.env.PORTER_TEST_LOG_LEVEL ?? "silent" });
let db: pg.Pool;
let worker: PorterWorker | undefined;
let claims = 0;

beforeAll(async () => {
  db = createPool(testDb.appConnectionString, { max: 8 });
  await controlPlane(db, {
    pool: { id: "tail-pool" },
    queues: [{ id: "bulk", concurrency_cap: 2 }, { id: "quick" }],
    jobTypes: [
      { id: "tail.slow", queue: "bulk" },
      { id: "tail.fast", queue: "quick" },
    ],
    tenants: ["tenant_A"],
  });
});

afterEach(async () => {
  await worker?.drain({ graceMs: 0 });
  worker = undefined;
});

afterAll(async () => {
  await db.end();
});

/** A worker of 8 slots on `tail-pool`, polls a minute apart: `tail.slow` sleeps `slowMs`, `tail.fast` returns at once. */
const startTailWorker = (pool: pg.Pool, options: { slowMs: number; capHandover: boolean }) =>
  PorterWorker.start({
    db: pool,
    connectionString: testDb.appConnectionString,
    poolId: "tail-pool",
    logger,
    concurrency: 8,
    pollIntervalMs: 60_000,
    disconnectedPollIntervalMs: 60_000,
    maintenance: false,
    capHandover: options.capHandover,
    handlers: createHandlerMap([
      defineHandler({ type: "tail.slow", run: async () => sleep(options.slowMs) }),
      defineHandler({ type: "tail.fast", run: async () => null }),
    ]),
  });

describe("a capped queue's tail", () => {
  it("claims again when a job of the queue that bounded the claim finishes, not at the poll", async () => {
    const counted = createPool(testDb.appConnectionString, { max: 6 });
    onEachQuery(counted, (query, args) => {
      if (isClaim(args)) claims += 1;
      return query(...args);
    });
    try {
      // The claim loop's own answer to a bound (the hand-over is the next test's).
      worker = await startTailWorker(counted, { slowMs: 150, capHandover: false });
      await sleep(300);
      claims = 0;
      // The quick queue's results are written while `bulk` holds its 2 slots: the claim they prompt
      // is cut to zero rows by the cap. Each later round of `bulk` must follow its own results.
      const startedAt = Date.now();
      const ids = await enqueue(db, [
        ...Array.from({ length: 8 }, () => ({ type: "tail.slow", payload: {} })),
        ...Array.from({ length: 6 }, () => ({ type: "tail.fast", payload: {} })),
      ]);
      await waitForStates(db, ids, ["SUCCEEDED"], 10_000);
      const elapsedMs = Date.now() - startedAt;
      // 4 rounds of 150 ms under the cap; waiting for a poll even once would take a minute.
      expect(elapsedMs).toBeLessThan(5_000);
      // A claim per freed round, not a claim per write of every result.
      expect(claims).toBeLessThanOrEqual(20);
    } finally {
      await worker?.drain({ graceMs: 0 });
      worker = undefined;
      await counted.end();
    }
  });

  it("hands a capped queue's room from each ack to the queue's next job: few claims, the cap exact across two workers", async () => {
    const counted = createPool(testDb.appConnectionString, { max: 12 });
    let handovers = 0;
    onEachQuery(counted, (query, args) => {
      if (isClaim(args)) claims += 1;
      if ((args[0] as { name?: string } | undefined)?.name === "porter.complete.handover") handovers += 1;
      return query(...args);
    });
    const workers: PorterWorker[] = [];
    let peak = 0;
    let isSampling = true;
    const sampler = (async () => {
      while (isSampling) {
        const { rows } = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM jobs WHERE queue_id = 'bulk' AND state = 'RUNNING'`);
        peak = Math.max(peak, rows[0]!.n);
      }
    })();
    try {
      for (let w = 0; w < 2; w++) {
        workers.push(await startTailWorker(counted, { slowMs: 25, capHandover: true }));
      }
      await sleep(300);
      claims = 0;
      const ids = await enqueue(
        db,
        Array.from({ length: 40 }, () => ({ type: "tail.slow", payload: {} })),
      );
      await waitForStates(db, ids, ["SUCCEEDED"], 10_000);
      // 20 rounds of the queue (40 jobs, cap 2): a claim each without the hand-over (the test above).
      expect(handovers).toBeGreaterThanOrEqual(10);
      expect(claims).toBeLessThanOrEqual(10);
      expect(peak).toBe(2);
    } finally {
      isSampling = false;
      await sampler;
      await Promise.all(workers.map((w) => w.drain({ graceMs: 0 })));
      await counted.end();
    }
  });
});
