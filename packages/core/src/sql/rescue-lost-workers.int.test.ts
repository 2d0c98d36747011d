import { useTestDatabase } from "@porter/db/testing/test-database";
import { beforeAll, describe, expect, it } from "vitest";
import { WORKER_LOST_AFTER_MS } from "../policy/worker-liveness";
import { controlPlane } from "../testing/control-plane-factory";
import { applyEffect } from "./apply-effect";
import { claimJobs } from "./claim-jobs";
import { enqueueJobs } from "./enqueue-jobs";
import { rescueExpiredLeases } from "./rescue-expired-leases";
import { rescueLostWorkers } from "./rescue-lost-workers";
import { startJobs } from "./start-jobs";
import { registerWorker } from "./workers";

// Issue 9, defect 16: a lost worker's jobs are released as soon as its heartbeat row is stale,
// and an attempt that never started (prefetched) is recorded but not counted.

const db = useTestDatabase();
let n = 0;
const enqueue = (count: number) =>
  enqueueJobs(
    db.pool,
    Array.from({ length: count }, () => ({ job_type: "q1.job", tenant_id: "tenant_A", payload: { n: ++n }, idempotency_key: `lost-${n}` })),
  );
const attempts = async (jobIds: string[]) =>
  (
    await db.pool.query<{ job_id: string; attempt: number; outcome: string; code: string }>(
      `SELECT job_id::text, attempt, outcome::text, error ->> 'code' AS code FROM job_attempts WHERE job_id = ANY($1::uuid[]) ORDER BY id`,
      [jobIds],
    )
  ).rows;
const rows = async (ids: string[]) =>
  (
    await db.pool.query<{ id: string; state: string; attempt: number }>(
      `SELECT id::text, state::text, attempt FROM jobs WHERE id = ANY($1::bigint[]) ORDER BY id`,
      [ids],
    )
  ).rows;
const worker = (id: string) => registerWorker(db.pool, { id, poolId: "p1", host: "h", pid: 1, version: "t", concurrency: 1 });
const later = (ms: number) => new Date(Date.now() + ms);

beforeAll(async () => {
  await controlPlane(db.pool, { queues: [{ id: "q1", lease_seconds: 300, max_attempts: 1, default_max_attempts: 1 }] });
});

describe("rescueLostWorkers", () => {
  it("releases a stale worker's jobs before their leases end: the started attempt burns, prefetched ones are not counted", async () => {
    await enqueue(3);
    await worker("w-lost");
    const claimed = await claimJobs(db.pool, { poolId: "p1", workerId: "w-lost", limit: 3, start: 1 });
    expect(claimed.map((c) => c.isStarted)).toEqual(expect.arrayContaining([true, false, false]));
    const started = claimed.find((c) => c.isStarted)!;
    const prefetched = claimed.filter((c) => !c.isStarted);

    // Fresh heartbeat: nothing happens.
    expect(await rescueLostWorkers(db.pool)).toMatchObject({ requeued: 0, dead: 0 });
    // Stale beyond the threshold, leases still far from their end.
    const outcome = await rescueLostWorkers(db.pool, { now: later(WORKER_LOST_AFTER_MS + 1_000) });
    // max_attempts 1: the started attempt was the last one (DEAD); the prefetched ones are READY, not counted.
    expect(outcome).toEqual({ requeued: 2, dead: 1, cancelled: 0, expired: 0, notStarted: 2 });
    expect(await rows(prefetched.map((p) => p.id))).toEqual(
      prefetched.map((p) => ({ id: p.id, state: "READY", attempt: 0 })).sort((a, b) => Number(a.id) - Number(b.id)),
    );
    const recorded = await attempts(claimed.map((c) => c.jobId));
    expect(recorded.filter((a) => a.job_id === started.jobId)).toEqual([{ job_id: started.jobId, attempt: 1, outcome: "lease_expired", code: "WORKER_LOST" }]);
    for (const p of prefetched) {
      expect(recorded.filter((a) => a.job_id === p.jobId)).toEqual([{ job_id: p.jobId, attempt: 1, outcome: "not_started", code: "NOT_STARTED" }]);
    }
    const { rows: dead } = await db.pool.query(`SELECT state::text, attempt, error ->> 'code' AS code FROM finished_jobs WHERE job_id = $1`, [started.jobId]);
    expect(dead).toEqual([{ state: "DEAD", attempt: 1, code: "WORKER_LOST" }]);

    // A prefetched job keeps its one attempt: claimed again, it is attempt 1.
    const again = await claimJobs(db.pool, { poolId: "p1", workerId: "w-next", limit: 10, now: later(WORKER_LOST_AFTER_MS + 2_000) });
    expect(again.map((c) => c.attempt)).toEqual([1, 1]);
    await db.pool.query(`DELETE FROM jobs WHERE id = ANY($1::bigint[])`, [again.map((c) => c.id)]);
  });

  it("takes no worker for lost right after PostgreSQL started (every heartbeat row is stale then)", async () => {
    await enqueue(1);
    await worker("w-restart");
    const [claimed] = await claimJobs(db.pool, { poolId: "p1", workerId: "w-restart", limit: 1 });
    const { rows: up } = await db.pool.query<{ started: Date }>(`SELECT pg_postmaster_start_time() AS started`);
    // A clock just after the server started: the worker's row looks stale, the server is too young to tell.
    const outcome = await rescueLostWorkers(db.pool, { now: new Date(up[0]!.started.getTime() + 1_000), lostAfterMs: 0 });
    expect(outcome).toMatchObject({ requeued: 0, dead: 0 });
    expect(await rows([claimed!.id])).toEqual([{ id: claimed!.id, state: "RUNNING", attempt: 1 }]);
    await db.pool.query(`DELETE FROM jobs WHERE id = $1`, [claimed!.id]);
  });

  it("leaves jobs of workers it does not know, and of live workers, to their leases", async () => {
    await enqueue(1);
    await worker("w-live");
    const [claimed] = await claimJobs(db.pool, { poolId: "p1", workerId: "w-unregistered", limit: 1 });
    expect(await rescueLostWorkers(db.pool, { now: later(WORKER_LOST_AFTER_MS * 10) })).toMatchObject({ requeued: 0, dead: 0 });
    expect(await rows([claimed!.id])).toEqual([{ id: claimed!.id, state: "RUNNING", attempt: 1 }]);
    await db.pool.query(`DELETE FROM jobs WHERE id = $1`, [claimed!.id]);
  });
});

describe("attempts that never started", () => {
  it("an attempt that applied an effect counts as started even when its start mark never landed", async () => {
    const [job] = await enqueue(1);
    const [claimed] = await claimJobs(db.pool, { poolId: "p1", workerId: "w-effect", limit: 1, start: 0 });
    expect(claimed).toMatchObject({ jobId: job!.job_id, isStarted: false });
    await applyEffect(
      db.pool,
      { id: claimed!.id, jobId: claimed!.jobId, tenantId: "tenant_A", attempt: claimed!.attempt, leaseToken: claimed!.leaseToken },
      "fx",
      async () => 1,
    );
    expect(await rescueExpiredLeases(db.pool, { now: later(301_000) })).toMatchObject({ notStarted: 0 });
    expect(await attempts([claimed!.jobId])).toEqual([{ job_id: claimed!.jobId, attempt: 1, outcome: "lease_expired", code: "LEASE_EXPIRED" }]);
  });

  it("are not counted when their lease expires either; once marked started they are", async () => {
    await enqueue(2);
    const claimed = await claimJobs(db.pool, { poolId: "p1", workerId: "w-x", limit: 2, start: 0 });
    expect(claimed.map((c) => c.isStarted)).toEqual([false, false]);
    const [marked, unmarked] = claimed;
    expect(await startJobs(db.pool, [{ id: marked!.id, leaseToken: marked!.leaseToken, attempt: marked!.attempt }])).toEqual({
      started: [marked!.id],
      lost: [],
    });
    // The fence: another attempt's token and number do not mark anything.
    expect(await startJobs(db.pool, [{ id: unmarked!.id, leaseToken: unmarked!.leaseToken, attempt: 9 }])).toEqual({ started: [], lost: [unmarked!.id] });

    expect(await rescueExpiredLeases(db.pool, { now: later(301_000) })).toEqual({ requeued: 1, dead: 1, cancelled: 0, expired: 0, notStarted: 1 });
    expect(await rows([unmarked!.id])).toEqual([{ id: unmarked!.id, state: "READY", attempt: 0 }]);
    expect(await attempts([marked!.jobId, unmarked!.jobId])).toEqual(
      expect.arrayContaining([
        { job_id: marked!.jobId, attempt: 1, outcome: "lease_expired", code: "LEASE_EXPIRED" },
        { job_id: unmarked!.jobId, attempt: 1, outcome: "not_started", code: "NOT_STARTED" },
      ]),
    );
  });
});
