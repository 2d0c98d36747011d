import { StaleLeaseError } from "@porter/core";
import { createPool } from "@porter/db/pool";
import { useTestDatabase } from "@porter/db/testing/test-database";
import { type AnyHandler, CHECKPOINT_MAX_BYTES, defineHandler, PermanentError, RetryableError } from "@porter/sdk";
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHandlerMap } from "../handlers/handler-map";
import { createLogger } from "../logger";
import { attemptsOf, createDiagPlane, enqueue, jobRow, waitFor, waitForStates } from "../testing/fixtures";
import { PorterWorker } from "./worker";

const testDb = useTestDatabase();
let db: pg.Pool;
/** Every statement the worker's pool ran (pool.query), with its prepared statement's name if any. */
const statements: Array<{ at: number; name: string | undefined; text: string }> = [];
/** The test's own reads and enqueues, on another pool: not counted. */
const probe = () => testDb.appPool;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const TYPES = ["test.progress", "test.checkpoint-stale", "test.resume", "test.bad-input", "test.dead-checkpoint"];

const handlers: AnyHandler[] = [
  // 200 progress reports over ~2 s; what the row showed meanwhile; then a last report, carried by the ack.
  defineHandler({
    type: "test.progress",
    run: async (job, ctx) => {
      const startedAt = Date.now();
      for (let i = 0; i < 200; i++) {
        ctx.progress({ fraction: i / 200, message: `item ${i} of 200`, step: "items" });
        await sleep(10);
      }
      const { rows } = await testDb.pool.query(`SELECT progress FROM jobs WHERE job_id = $1`, [job.job_id]);
      ctx.progress({ fraction: 1, message: "all 200 items", step: "done" });
      return { startedAt, endedAt: Date.now(), meanwhile: rows[0].progress };
    },
  }),
  // Checkpoints, then its lease is taken away under it: the next checkpoint is refused.
  defineHandler({
    type: "test.checkpoint-stale",
    run: async (job, ctx) => {
      await ctx.checkpoint({ page: 1 });
      const { rows } = await testDb.pool.query(`SELECT checkpoint FROM jobs WHERE job_id = $1`, [job.job_id]);
      await testDb.pool.query(`UPDATE jobs SET lease_token = lease_token + 1000 WHERE job_id = $1`, [job.job_id]);
      const refused = await ctx.checkpoint({ page: 2 }).then(
        () => "written",
        (error: Error) => error.name,
      );
      await testDb.pool.query(`INSERT INTO diag_effects (key, applied) VALUES ($1, 1)`, [
        `${job.job_id}:${refused}:${JSON.stringify(rows[0].checkpoint)}:${ctx.signal.aborted}`,
      ]);
      return { refused };
    },
  }),
  // Attempt 1 checkpoints (the last one not awaited) and fails; attempt 2 resumes from it.
  defineHandler({
    type: "test.resume",
    run: async (job, ctx) => {
      if (job.attempt === 1) {
        await ctx.checkpoint({ next: 3 });
        void ctx.checkpoint({ next: 4 });
        throw new RetryableError("provider hiccup", { code: "HICCUP" });
      }
      return { resumedFrom: ctx.lastCheckpoint, attempt: job.attempt };
    },
  }),
  // Bad input is refused in the handler, typed, and nothing is written.
  defineHandler({
    type: "test.bad-input",
    run: async (_job, ctx) => {
      const codes: string[] = [];
      const attempt = (fn: () => unknown) => {
        try {
          fn();
          codes.push("accepted");
        } catch (error) {
          codes.push(`${(error as Error).name}:${(error as PermanentError).code}`);
        }
      };
      attempt(() => ctx.progress({ fraction: 2 }));
      attempt(() => ctx.progress({ message: "m".repeat(201) }));
      attempt(() => ctx.checkpoint({ blob: "x".repeat(CHECKPOINT_MAX_BYTES) }));
      attempt(() => ctx.checkpoint({ n: 1n }));
      await sleep(1_200); // a heartbeat would have carried a progress, had one been accepted
      return { codes };
    },
  }),
  // Dies with a checkpoint: its structured error carries it.
  defineHandler({
    type: "test.dead-checkpoint",
    run: async (_job, ctx) => {
      await ctx.checkpoint({ rows_done: 120 });
      throw new PermanentError("the input is corrupt at row 121", { code: "CORRUPT" });
    },
  }),
];

let worker: PorterWorker;

beforeAll(async () => {
  db = createPool(testDb.appConnectionString, { max: 8 });
  const query = db.query.bind(db) as (...args: unknown[]) => unknown;
  (db as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
    const config = args[0] as string | { name?: string; text: string };
    statements.push({ at: Date.now(), name: typeof config === "string" ? undefined : config.name, text: typeof config === "string" ? config : config.text });
    return query(...args);
  };
  // 30 s leases: a heartbeat is due every 10 s, unless progress makes it due sooner.
  await createDiagPlane(db, { queue: { lease_seconds: 30, backoff_base_ms: 10, backoff_cap_ms: 20 } });
  for (const type of TYPES) await testDb.pool.query(`INSERT INTO job_types (id, queue_id) VALUES ($1, 'diag')`, [type]);
  worker = await PorterWorker.start({
    db,
    connectionString: testDb.appConnectionString,
    poolId: "diag-pool",
    logger: createLogger({ level: process.env.PORTER_TEST_LOG_LEVEL ?? "silent" }),
    concurrency: 4,
    handlers: createHandlerMap(handlers),
  });
});

afterAll(async () => {
  await worker?.drain({ graceMs: 1_000 });
  await db.end();
});

describe("ctx.progress", () => {
  it("is written with the lease heartbeats: 201 reports cost no statement of their own, and the last value wins", async () => {
    const [id] = await enqueue(probe(), [{ type: "test.progress", payload: {} }]);
    await waitForStates(probe(), [id!], ["SUCCEEDED"]);
    const { result } = (await jobRow(probe(), id!)) as unknown as { result: { startedAt: number; endedAt: number; meanwhile: { fraction: number } } };
    const during = statements.filter((s) => s.at >= result.startedAt && s.at <= result.endedAt);
    const heartbeats = during.filter((s) => s.name === "porter.extend");
    // ~2 s of reports at one batch a second at most (10 s apart without progress).
    expect(heartbeats.length).toBeGreaterThanOrEqual(1);
    expect(heartbeats.length).toBeLessThanOrEqual(3);
    // No other statement writes progress, and the worker was otherwise quiet (claims, its own heartbeat).
    expect(during.filter((s) => /progress/.test(s.text) && s.name !== "porter.extend")).toEqual([]);
    expect(during.length).toBeLessThan(20);
    // A heartbeat had carried a report of the loop while the handler ran.
    expect(result.meanwhile).toMatchObject({ step: "items", fraction: expect.any(Number) });
    expect(result.meanwhile.fraction).toBeLessThan(1);

    // The last report, made after the last heartbeat, went with the ack.
    const { rows } = await probe().query(`SELECT progress FROM finished_jobs WHERE job_id = $1`, [id]);
    expect(rows[0].progress).toEqual({ fraction: 1, message: "all 200 items", step: "done" });
  });

  it("refuses bad progress and checkpoints with a typed error in the handler, writing nothing", async () => {
    const [id] = await enqueue(probe(), [{ type: "test.bad-input", payload: {} }]);
    await waitForStates(probe(), [id!], ["SUCCEEDED"]);
    expect((await jobRow(probe(), id!))?.result).toEqual({
      codes: [
        "PermanentError:INVALID_PROGRESS",
        "PermanentError:INVALID_PROGRESS",
        "PermanentError:CHECKPOINT_TOO_LARGE",
        "PermanentError:CHECKPOINT_NOT_JSON",
      ],
    });
    const { rows } = await probe().query(`SELECT progress, checkpoint FROM finished_jobs WHERE job_id = $1`, [id]);
    expect(rows[0]).toEqual({ progress: null, checkpoint: null });
  });
});

describe("ctx.checkpoint", () => {
  it("resolves once durable, and is refused once the attempt lost its lease (which aborts the handler)", async () => {
    const [id] = await enqueue(probe(), [{ type: "test.checkpoint-stale", payload: {} }]);
    const key = await waitFor("the handler's report", async () => {
      const { rows } = await probe().query<{ key: string }>(`SELECT key FROM diag_effects WHERE key LIKE $1`, [`${id}:%`]);
      return rows[0]?.key;
    });
    expect(key).toBe(`${id}:${StaleLeaseError.name}:{"page":1}:true`);
    const { rows } = await probe().query(`SELECT state, checkpoint FROM jobs WHERE job_id = $1`, [id]);
    expect(rows[0]).toEqual({ state: "RUNNING", checkpoint: { page: 1 } }); // the result was discarded
  });

  it("is what the next attempt reads as ctx.lastCheckpoint after a retry, including one the handler did not await", async () => {
    const [id] = await enqueue(probe(), [{ type: "test.resume", payload: {}, maxAttempts: 3 }]);
    await waitForStates(probe(), [id!], ["SUCCEEDED"]);
    expect(await jobRow(probe(), id!)).toMatchObject({ attempt: 2, result: { resumedFrom: { next: 4 }, attempt: 2 } });
    expect((await attemptsOf(probe(), id!))[0]).toMatchObject({ outcome: "failed", error: { code: "HICCUP", last_checkpoint: { next: 4 } } });
  });

  it("is in a dead job's structured error", async () => {
    const [id] = await enqueue(probe(), [{ type: "test.dead-checkpoint", payload: {} }]);
    await waitForStates(probe(), [id!], ["DEAD"]);
    expect(await jobRow(probe(), id!)).toMatchObject({ error: { code: "CORRUPT", last_checkpoint: { rows_done: 120 } } });
  });
});
