import { controlPlane } from "@porter/core/testing/control-plane-factory";
import { createPool } from "@porter/db/pool";
import { useTestDatabase } from "@porter/db/testing/test-database";
import { defineHandler, RetryableError } from "@porter/sdk";
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { createHandlerMap } from "../handlers";
import { sleepFor } from "../handlers/sleep";
import { createLogger } from "../logger";
import { enqueue, waitFor, waitForStates } from "../testing/fixtures";
import { PorterWorker } from "./worker";

// A handler's provider 429 slows its resource key down for everyone (issue 4): the key's
// concurrency halves and it pauses until Retry-After, for every queue that shares it. Core's
// side (halving, the pause in the claim, recovery) is packages/core/src/sql/rate-limits.int.test.ts.
const testDb = useTestDatabase();
const logger = createLogger({ level: process.env.PORTER_TEST_LOG_LEVEL ?? "silent" });
// Long enough that the rest of the test (enqueueing during the pause) fits in it on a loaded machine.
const RETRY_AFTER_MS = 3_000;
let db: pg.Pool;

/** `llm.call`: the provider answers 429 with Retry-After on the first attempt, then succeeds. */
const llmCall = defineHandler({
  type: "llm.call",
  payload: z.object({}),
  run: async (job) => {
    if (job.attempt === 1) throw new RetryableError("429", { isThrottle: true, retryAfterMs: RETRY_AFTER_MS });
    return { ok: true };
  },
});
/** `llm.summary`: another queue's use of the same provider. */
const llmSummary = defineHandler({
  type: "llm.summary",
  payload: z.object({ ms: z.number() }),
  run: async (job, ctx) => {
    await sleepFor(job.payload.ms, ctx.signal);
    return { ok: true };
  },
});

beforeAll(async () => {
  db = createPool(testDb.appConnectionString, { max: 12 });
  await db.query(`INSERT INTO resource_keys (id, concurrency_limit) VALUES ('llm', 4)`);
  await controlPlane(db, {
    pool: "agents",
    queues: [{ id: "calls" }, { id: "summaries" }],
    jobTypes: [
      { id: "llm.call", queue: "calls" },
      { id: "llm.summary", queue: "summaries" },
    ],
  });
  await db.query(`UPDATE queues SET resource_key_id = 'llm'`);
});

afterAll(async () => {
  await db.end();
});

describe("a handler's throttle (provider 429)", () => {
  it("halves the resource key's concurrency and pauses it for every queue sharing it until Retry-After", async () => {
    const worker = await PorterWorker.start({
      db,
      connectionString: testDb.appConnectionString,
      poolId: "agents",
      concurrency: 8,
      logger,
      handlers: createHandlerMap([llmCall, llmSummary]),
      maintenance: false, // no recovery step during the test: the halved limit stays
      pollIntervalMs: 50,
    });
    try {
      const [call] = await enqueue(db, [{ type: "llm.call", payload: {} }]);
      const key = await waitFor("the key to be throttled", async () => {
        const { rows } = await db.query<{ current_limit: number; throttled_until: Date; adapted_at: Date }>(
          `SELECT current_limit, throttled_until, adapted_at FROM resource_keys WHERE id = 'llm' AND throttled_until IS NOT NULL`,
        );
        return rows[0];
      });
      expect(key.current_limit).toBe(2);
      expect(key.throttled_until.getTime() - key.adapted_at.getTime()).toBe(RETRY_AFTER_MS);

      // Work of another queue on the same key, enqueued during the pause.
      const enqueuedAt = Date.now();
      const summaries = await enqueue(
        db,
        Array.from({ length: 8 }, () => ({ type: "llm.summary", payload: { ms: 150 } })),
      );
      expect(enqueuedAt).toBeLessThan(key.throttled_until.getTime()); // the pause was still on
      await waitForStates(db, [call!, ...summaries], ["SUCCEEDED"], 30_000);

      const { rows } = await db.query<{ job_type: string; attempt: number; claimed_at: Date; finished_at: Date }>(
        `SELECT job_type, attempt, claimed_at, finished_at FROM finished_jobs ORDER BY claimed_at`,
      );
      // Nothing of the key started before the pause ended, the retried call included.
      expect(rows.map((r) => r.claimed_at.getTime()).every((t) => t >= key.throttled_until.getTime())).toBe(true);
      expect(rows.find((r) => r.job_type === "llm.call")?.attempt).toBe(2);
      // Afterwards at most the halved limit ran at once (RUNNING from claim to ack), not the configured 4.
      const edges = rows.flatMap((r) => [
        { t: r.claimed_at.getTime(), d: 1 },
        { t: r.finished_at.getTime(), d: -1 },
      ]);
      edges.sort((a, b) => a.t - b.t || a.d - b.d);
      let running = 0;
      let peak = 0;
      for (const e of edges) {
        running += e.d;
        peak = Math.max(peak, running);
      }
      expect(peak).toBe(2);
    } finally {
      await worker.drain({ graceMs: 0 });
    }
  });
});
