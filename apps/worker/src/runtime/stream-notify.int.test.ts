import { StreamHub, type StreamRow, streamEventName } from "@porter/core";
import { createPool } from "@porter/db/pool";
import { useTestDatabase } from "@porter/db/testing/test-database";
import { type AnyHandler, defineHandler, RetryableError } from "@porter/sdk";
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHandlerMap } from "../handlers/handler-map";
import { createLogger } from "../logger";
import { createDiagPlane, enqueue } from "../testing/fixtures";
import { PorterWorker } from "./worker";

// The worker runtime wakes the live status stream itself (issue 13): after its claims, its
// acks/failures and its progress heartbeats it sends the debounced pg_notify, so a StreamHub whose
// backstop poll is a minute away still sees a job that retries then succeeds, in order, at once.
// A server of its own: the status stream is read below the server-wide xmin (core's testing/stream-wait.ts).
const testDb = useTestDatabase({ isOwnServer: true });
let db: pg.Pool;
let worker: PorterWorker;
let hub: StreamHub;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const handlers: AnyHandler[] = [
  defineHandler({
    type: "test.stream",
    run: async (job, ctx) => {
      ctx.progress({ fraction: 0.5, step: "half" });
      await sleep(2000); // past PROGRESS_FLUSH_MS and a lease-keeper tick: a heartbeat carries the progress
      if (job.attempt === 1) throw new RetryableError("once more");
      return { ok: true };
    },
  }),
];

beforeAll(async () => {
  db = createPool(testDb.appConnectionString, { max: 6 });
  await createDiagPlane(db, { queue: { lease_seconds: 3, backoff_base_ms: 10, backoff_cap_ms: 20 } });
  await testDb.pool.query(`INSERT INTO job_types (id, queue_id) VALUES ('test.stream', 'diag')`);
  hub = new StreamHub({ pool: testDb.appPool, listen: { connectionString: testDb.appConnectionString }, pollMs: 60_000 });
  worker = await PorterWorker.start({
    db,
    connectionString: testDb.appConnectionString,
    poolId: "diag-pool",
    logger: createLogger({ level: process.env.PORTER_TEST_LOG_LEVEL ?? "silent" }),
    concurrency: 2,
    handlers: createHandlerMap(handlers),
    maintenance: false,
  });
});
afterAll(async () => {
  await worker?.drain({ graceMs: 1000 });
  await hub?.close();
  await db?.end();
});

describe("the worker's stream wake-ups", () => {
  it("claim, progress, retry, claim, progress, success reach a subscriber without the backstop poll", async () => {
    const events: string[] = [];
    const [jobId] = await enqueue(testDb.appPool, [{ type: "test.stream", payload: {} }]);
    const sub = await hub.subscribe(
      { tenantId: "tenant_A", jobTypes: null, jobId: jobId! },
      { onEvent: (row: StreamRow) => events.push(`${streamEventName(row)}@${row.attempt}`) },
    );
    try {
      await expect.poll(() => events.at(-1), { timeout: 20_000 }).toBe("job.succeeded@2");
      // The snapshot first (the job's state when it subscribed), then every change after it.
      const full = ["job.ready@0", "job.running@1", "job.progress@1", "job.retry_wait@1", "job.running@2", "job.progress@2", "job.succeeded@2"];
      expect(full).toContain(events[0]);
      expect(events).toEqual(full.slice(full.indexOf(events[0]!)));
      expect(hub.reads).toBeGreaterThan(2); // read on wake-ups: the backstop poll would not come for a minute
    } finally {
      sub.close();
    }
  });
});
