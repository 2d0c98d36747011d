import { cancelJob, MAINTENANCE_LOCK_KEY, READY_CHANNEL } from "@porter/core";
import { createPool } from "@porter/db/pool";
import { useTestDatabase } from "@porter/db/testing/test-database";
import type pg from "pg";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../logger";
import { attemptsOf, createDiagPlane, enqueue, isClaim, jobRow, onEachQuery, statesOf, waitFor, waitForStates } from "../testing/fixtures";
import { PorterWorker, type WorkerOptions } from "./worker";

const testDb = useTestDatabase();
const logger = createLogger({ level: process.env.PORTER_TEST_LOG_LEVEL ?? "silent" });
let db: pg.Pool;
let pool: string;
let worker: PorterWorker | undefined;

const startWorker = async (options: Partial<WorkerOptions> = {}) => {
  worker = await PorterWorker.start({
    db,
    connectionString: testDb.appConnectionString,
    poolId: pool,
    logger,
    version: "test-1.2.3",
    hangGraceMs: 300,
    ...options,
  });
  return worker;
};

beforeAll(async () => {
  db = createPool(testDb.appConnectionString, { max: 12 });
  pool = await createDiagPlane(db, { queue: { lease_seconds: 30, backoff_base_ms: 20, backoff_cap_ms: 100 } });
  // A type routed to this pool that the worker has no handler for.
  await db.query(`INSERT INTO queues (id, pool_id) VALUES ('orphans', $1)`, [pool]);
  await db.query(`INSERT INTO job_types (id, queue_id) VALUES ('unknown.type', 'orphans')`);
});

afterEach(async () => {
  await worker?.drain({ graceMs: 0 });
  worker = undefined;
});

afterAll(async () => {
  await db.end();
});

/** The backend of the worker's LISTEN connection, once it is connected. */
const listenerPid = () =>
  db
    .query<{ pid: number }>(`SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'porter-worker-listen'`)
    .then((r) => r.rows[0]?.pid);

describe("worker runtime (in process)", () => {
  it("runs enqueued jobs to SUCCEEDED with their results, in batches", async () => {
    await startWorker({ concurrency: 4 });
    const ids = await enqueue(db, [
      ...Array.from({ length: 20 }, (_, i) => ({ type: "diag.sleep", payload: { ms: 5 + i } })),
      { type: "diag.effect", payload: { key: "runtime-ok" } },
    ]);
    await waitForStates(db, ids, ["SUCCEEDED"]);
    const first = await jobRow(db, ids[0]!);
    expect(first).toMatchObject({ state: "SUCCEEDED", attempt: 1, result: { slept_ms: 5 } });
    const effect = await jobRow(db, ids[20]!);
    expect(effect?.result).toEqual({ key: "runtime-ok", applied: 1 });
    const { rows } = await db.query(`SELECT applied FROM diag_effects WHERE key = 'runtime-ok'`);
    expect(rows[0]).toEqual({ applied: 1 });
    const registered = await db.query(`SELECT pool_id, version, concurrency FROM workers WHERE id = $1`, [worker!.id]);
    expect(registered.rows[0]).toEqual({ pool_id: pool, version: "test-1.2.3", concurrency: 4 });
  });

  it("retries a transient failure with backoff, then succeeds", async () => {
    await startWorker({ concurrency: 2 });
    const [id] = await enqueue(db, [{ type: "diag.fail", payload: { mode: "transient", until_attempt: 3 } }]);
    await waitForStates(db, [id!], ["SUCCEEDED"]);
    expect(await jobRow(db, id!)).toMatchObject({ attempt: 3, result: { succeeded_on_attempt: 3 } });
    const attempts = await attemptsOf(db, id!);
    expect(attempts.map((a) => a.outcome)).toEqual(["failed", "failed", "succeeded"]);
    expect(attempts[0]?.error).toMatchObject({ code: "DIAG_TRANSIENT", class: "retryable", attempt: 1 });
  });

  it("records a permanent failure as DEAD with a structured error (no stack)", async () => {
    await startWorker({ concurrency: 2 });
    const [permanent, invalid, orphan] = await enqueue(db, [
      { type: "diag.fail", payload: { mode: "permanent" } },
      { type: "diag.sleep", payload: { ms: "soon" } },
      { type: "unknown.type", payload: { source_ref: "s3://x" } },
    ]);
    await waitForStates(db, [permanent!, invalid!, orphan!], ["DEAD"]);
    const dead = await jobRow(db, permanent!);
    const { rows } = await db.query<{ trace_id: string }>(`SELECT trace_id FROM finished_jobs WHERE job_id = $1`, [permanent]);
    expect(dead?.error).toEqual({
      code: "DIAG_PERMANENT",
      class: "permanent",
      message: "diag.fail: permanent failure on attempt 1",
      worker_version: "test-1.2.3",
      attempt: 1,
      trace_id: rows[0]!.trace_id,
      last_checkpoint: null,
    });
    expect(JSON.stringify(dead?.error)).not.toMatch(/\bat .*\.ts:\d+/);
    expect((await jobRow(db, invalid!))?.error).toMatchObject({ code: "INVALID_PAYLOAD", class: "permanent" });
    expect((await jobRow(db, orphan!))?.error).toMatchObject({ code: "NO_HANDLER", class: "permanent" });
  });

  it("records a handler that ignores its timeout as timed_out and frees the slot", async () => {
    await startWorker({ concurrency: 1, hangGraceMs: 300 });
    const startedAt = Date.now();
    const [hang, after] = await enqueue(db, [
      { type: "diag.hang", payload: {}, timeoutS: 1, maxAttempts: 1, priority: 90 },
      { type: "diag.sleep", payload: { ms: 10 }, priority: 10 },
    ]);
    await waitForStates(db, [hang!, after!], ["DEAD", "SUCCEEDED"]);
    expect((await jobRow(db, hang!))?.state).toBe("DEAD");
    expect((await jobRow(db, after!))?.state).toBe("SUCCEEDED");
    const attempts = await attemptsOf(db, hang!);
    expect(attempts).toHaveLength(1);
    expect(attempts[0]).toMatchObject({ outcome: "timed_out", error: { code: "TIMEOUT", class: "timeout" } });
    // Timeout (1 s) + hang grace (0.3 s), not the queue lease or a stuck slot.
    expect(Date.now() - startedAt).toBeLessThan(6_000);
  });

  it("cancels a running job: the handler's signal aborts and the job is CANCELLED", async () => {
    await startWorker({ concurrency: 2 });
    const [id] = await enqueue(db, [{ type: "diag.sleep", payload: { ms: 30_000 } }]);
    await waitForStates(db, [id!], ["RUNNING"]);
    const requestedAt = Date.now();
    const answer = await cancelJob(db, { jobId: id!, actor: "test", reason: "operator asked" });
    expect(answer.status).toBe("RUNNING");
    await waitForStates(db, [id!], ["CANCELLED"], 5_000);
    expect(Date.now() - requestedAt).toBeLessThan(3_000);
    const attempts = await attemptsOf(db, id!);
    expect(attempts.map((a) => a.outcome)).toEqual(["cancelled"]);
    expect((await jobRow(db, id!))?.error).toMatchObject({ code: "CANCELLED", class: "cancelled", message: "cancelled: operator asked" });
  });

  it("discards the result of an attempt whose lease was lost (a heartbeat finds another token)", async () => {
    await db.query(`UPDATE queues SET lease_seconds = 1 WHERE id = 'diag'`);
    try {
      await startWorker({ concurrency: 1, maintenance: false });
      const [id] = await enqueue(db, [{ type: "diag.effect", payload: { key: "lost-lease", ms: 1_500 } }]);
      await waitForStates(db, [id!], ["RUNNING"]);
      // Someone else now holds the job (as after a rescue and a re-claim elsewhere).
      const { rows } = await db.query<{ token: string }>(
        `UPDATE jobs SET lease_token = nextval('lease_token_seq'), lease_until = now() + interval '1 hour'
          WHERE job_id = $1 RETURNING lease_token::text AS token`,
        [id],
      );
      await waitFor("the attempt to be discarded", () => worker!.running === 0, { timeoutMs: 5_000 });
      await new Promise((resolve) => setTimeout(resolve, 300));
      const row = await jobRow(db, id!);
      expect(row).toMatchObject({ state: "RUNNING", lease_token: rows[0]!.token });
      const effects = await db.query(`SELECT 1 FROM diag_effects WHERE key = 'lost-lease'`);
      expect(effects.rowCount).toBe(0);
      await db.query(`DELETE FROM jobs WHERE job_id = $1`, [id]);
    } finally {
      await db.query(`UPDATE queues SET lease_seconds = 30 WHERE id = 'diag'`);
    }
  });

  it("drains in process: finished work acked, unfinished handed back without burning an attempt", async () => {
    const w = await startWorker({ concurrency: 4 });
    const ids = await enqueue(db, [
      { type: "diag.sleep", payload: { ms: 50 } },
      { type: "diag.sleep", payload: { ms: 60_000 } },
      { type: "diag.sleep", payload: { ms: 60_000 } },
    ]);
    await waitFor("3 jobs claimed", async () => (await db.query(`SELECT 1 FROM jobs WHERE state = 'RUNNING'`)).rowCount === 2 || undefined);
    const report = await w.drain({ graceMs: 300 });
    expect(report.finishedInGrace).toBe(false);
    expect(report.handedBack).toHaveLength(2);
    expect((await jobRow(db, ids[0]!))?.state).toBe("SUCCEEDED");
    for (const id of ids.slice(1)) expect(await jobRow(db, id)).toMatchObject({ state: "READY", attempt: 0 });
    const stopped = await db.query(`SELECT stopped_at IS NOT NULL AS stopped FROM workers WHERE id = $1`, [w.id]);
    expect(stopped.rows[0]).toEqual({ stopped: true });
    await db.query(`DELETE FROM jobs WHERE job_id = ANY($1::uuid[])`, [ids.slice(1)]);
  });

  it("prefetches ahead of free slots, hands back jobs buffered too long and backs off its prefetch", async () => {
    await startWorker({ concurrency: 1, prefetch: 4, maxBufferMs: 150, pollIntervalMs: 50 });
    const ids = await enqueue(
      db,
      Array.from({ length: 5 }, () => ({ type: "diag.sleep", payload: { ms: 600 } })),
    );
    await waitForStates(db, ids, ["SUCCEEDED"], 30_000);
    const handedBack = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM job_attempts WHERE job_id = ANY($1::uuid[]) AND outcome = 'handed_back'`, [
      ids,
    ]);
    // The first expiry hands back the 4 buffered jobs. Without backing off, the worker would re-claim
    // and hand back ~4 jobs every 150 ms for the ~3 s the jobs take (~80); halving bounds it.
    expect(handedBack.rows[0]!.n).toBeGreaterThanOrEqual(4);
    expect(handedBack.rows[0]!.n).toBeLessThanOrEqual(12);
    for (const id of ids) expect(await jobRow(db, id)).toMatchObject({ attempt: 1 });
  });

  it("reconnects its listener after the connection drops and still hears new work at once", async () => {
    // Polls are 60 s apart: only a notification can start the job quickly.
    await startWorker({ concurrency: 2, pollIntervalMs: 60_000, disconnectedPollIntervalMs: 60_000 });
    const before = await waitFor("the listener to connect", listenerPid);
    await db.query(`SELECT pg_terminate_backend($1)`, [before]);
    await waitFor("the listener to reconnect", async () => {
      const pid = await listenerPid();
      return pid !== undefined && pid !== before ? pid : undefined;
    });
    const [id] = await enqueue(db, [{ type: "diag.sleep", payload: { ms: 1 } }]);
    await waitForStates(db, [id!], ["SUCCEEDED"], 3_000);
  });

  it("claims a notified job on an idle worker at once, not after the debounce window", async () => {
    // Polls are a minute apart and the debounce window 5 s: only an immediate claim is fast.
    await startWorker({ concurrency: 2, notifyDebounceMs: 5_000, pollIntervalMs: 60_000, disconnectedPollIntervalMs: 60_000 });
    await waitFor("the listener to connect", () => listenerPid());
    for (let i = 0; i < 3; i++) {
      // Idle: the start-up claims and the claim after the previous job's result are long done.
      await new Promise((resolve) => setTimeout(resolve, 200));
      const [id] = await enqueue(db, [{ type: "diag.sleep", payload: { ms: 1 } }]);
      await waitForStates(db, [id!], ["SUCCEEDED"], 10_000);
      // Database clock: enqueue transaction start → claim, whatever the test's polling adds.
      const { rows } = await db.query<{ ms: number }>(
        `SELECT (extract(epoch FROM claimed_at - created_at) * 1000)::float8 AS ms FROM finished_jobs WHERE job_id = $1`,
        [id],
      );
      expect(rows[0]!.ms).toBeLessThan(1_000);
    }
  });

  it("writes a lone result at once, and one that has company after the flush interval", async () => {
    // The flush interval is long, so only a result written without waiting for it is fast.
    await startWorker({ concurrency: 2, flushIntervalMs: 3_000 });
    await waitFor("the listener to connect", () => listenerPid());
    const written = async (id: string) =>
      (await db.query<{ ms: number }>(`SELECT (extract(epoch FROM finished_at - claimed_at) * 1000)::float8 AS ms FROM finished_jobs WHERE job_id = $1`, [id]))
        .rows[0]!.ms;
    // Alone: no other attempt runs and nothing is buffered.
    const [lone] = await enqueue(db, [{ type: "diag.sleep", payload: { ms: 1 } }]);
    await waitForStates(db, [lone!], ["SUCCEEDED"], 10_000);
    expect(await written(lone!)).toBeLessThan(1_500);
    // With company: another attempt runs on, so the short job's result waits for the interval.
    const [long, short] = await enqueue(db, [
      { type: "diag.sleep", payload: { ms: 6_000 } },
      { type: "diag.sleep", payload: { ms: 1 } },
    ]);
    await waitForStates(db, [short!], ["SUCCEEDED"], 10_000);
    expect(await written(short!)).toBeGreaterThanOrEqual(2_900);
    expect((await statesOf(db, [long!])).get(long!)).toBe("RUNNING");
  });

  it("claims again when work was announced while a claim was running (no lost wake-up)", async () => {
    // Every claim's result is held back 400 ms after the statement ran, so a job enqueued then is
    // announced while the claim is still "running" and missing from its result. Polls are a minute
    // apart: only a claim made because of that announcement starts the job in time.
    const slow = createPool(testDb.appConnectionString, { max: 4 });
    let claimsDone = 0;
    onEachQuery(slow, (query, args) => {
      if (!isClaim(args)) return query(...args);
      return (async () => {
        const result = await query(...args);
        await new Promise((resolve) => setTimeout(resolve, 400));
        claimsDone += 1;
        return result;
      })();
    });
    try {
      await startWorker({ db: slow, concurrency: 4, pollIntervalMs: 60_000, disconnectedPollIntervalMs: 60_000 });
      await waitFor("the listener to connect", () => listenerPid());
      await waitFor("the start-up claims to end", async () => (claimsDone >= 1 ? true : undefined));
      await new Promise((resolve) => setTimeout(resolve, 500));
      // The first job runs long, so no result written meanwhile prompts a claim either.
      const [first] = await enqueue(db, [{ type: "diag.sleep", payload: { ms: 4_000 } }]);
      // The first job's claim ran and is being held: announce the second one now.
      await new Promise((resolve) => setTimeout(resolve, 150));
      const [second] = await enqueue(db, [{ type: "diag.sleep", payload: { ms: 1 } }]);
      await waitForStates(db, [second!], ["SUCCEEDED"], 2_500);
      expect((await statesOf(db, [first!])).get(first!)).toBe("RUNNING");
    } finally {
      await worker?.drain({ graceMs: 0 });
      worker = undefined;
      await slow.end();
    }
  });

  it("coalesces a burst of 1000 notifications into a claim or two per debounce window", async () => {
    const debounceMs = 50;
    const counted = createPool(testDb.appConnectionString, { max: 4 });
    let claims = 0;
    onEachQuery(counted, (query, args) => {
      if (isClaim(args)) claims += 1;
      return query(...args);
    });
    try {
      await startWorker({ db: counted, concurrency: 4, notifyDebounceMs: debounceMs, pollIntervalMs: 60_000 });
      await waitFor("the listener to connect", () => listenerPid());
      await new Promise((resolve) => setTimeout(resolve, 200));
      claims = 0;
      const startedAt = Date.now();
      // Each in its own transaction (PostgreSQL folds equal notifications within one), from 4
      // connections at once: they arrive faster than a claim takes, as from many producers.
      await Promise.all(
        Array.from({ length: 4 }, async () => {
          for (let i = 0; i < 250; i++) await db.query(`SELECT pg_notify($1, $2)`, [READY_CHANNEL, pool]);
        }),
      );
      // The last window's claim.
      await new Promise((resolve) => setTimeout(resolve, 3 * debounceMs));
      const elapsedMs = Date.now() - startedAt;
      expect(claims).toBeGreaterThanOrEqual(1);
      // Without the window a claim would follow the previous one back to back for the whole burst.
      expect(claims).toBeLessThanOrEqual(2 * Math.ceil(elapsedMs / debounceMs) + 2);
    } finally {
      await worker?.drain({ graceMs: 0 });
      worker = undefined;
      await counted.end();
    }
  });

  it("keeps one maintenance leader; another worker takes over when the leader's connection drops", async () => {
    const fast = { acquireEveryMs: 100, runEveryMs: 100 };
    await startWorker({ concurrency: 1, maintenance: fast });
    const other = await PorterWorker.start({ db, connectionString: testDb.appConnectionString, poolId: pool, logger, concurrency: 1, maintenance: fast });
    try {
      const holders = () =>
        db
          .query<{ pid: number }>(
            `SELECT l.pid FROM pg_locks l JOIN pg_database d ON d.oid = l.database
              WHERE l.locktype = 'advisory' AND l.granted AND l.classid = 0 AND l.objid = $1::bigint::oid AND l.objsubid = 1
                AND d.datname = current_database()`,
            [MAINTENANCE_LOCK_KEY],
          )
          .then((r) => r.rows.map((row) => row.pid));
      const [leader] = await waitFor("a maintenance leader", async () => ((await holders()).length > 0 ? holders() : undefined));
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(await holders()).toEqual([leader]);
      await db.query(`SELECT pg_terminate_backend($1)`, [leader]);
      const next = await waitFor("a new maintenance leader", async () => {
        const now = await holders();
        return now.length === 1 && now[0] !== leader ? now : undefined;
      });
      expect(next).toHaveLength(1);
    } finally {
      await other.drain({ graceMs: 0 });
    }
  });
});
