import type { TJobError } from "@porter/contracts";
import { useTestDatabase } from "@porter/db/testing/test-database";
import { beforeAll, describe, expect, it } from "vitest";
import { getJob } from "../reads/get-job";
import { controlPlane } from "../testing/control-plane-factory";
import { type ClaimedJob, claimJobs } from "./claim-jobs";
import { completeJobs } from "./complete-jobs";
import { type EnqueueInput, enqueueJobs } from "./enqueue-jobs";
import { extendLeases } from "./extend-leases";
import { failJobs } from "./fail-jobs";
import { redriveJobs } from "./redrive-jobs";
import { rescueExpiredLeases } from "./rescue-expired-leases";
import { saveCheckpoint } from "./save-checkpoint";

const db = useTestDatabase();
let n = 0;
const input = (over: Partial<EnqueueInput> = {}): EnqueueInput => ({
  job_type: "q1.job",
  tenant_id: "tenant_A",
  payload: { n: ++n },
  idempotency_key: `cp-${n}`,
  ...over,
});
const error = (attempt: number, next = "RETRY_WAIT"): TJobError => ({
  code: "BOOM",
  class: next === "DEAD" ? "permanent" : "retryable",
  message: "boom",
  worker_version: "test",
  attempt,
  trace_id: "t",
  last_checkpoint: null,
});

/** Claims at `now` (acking any other job claimed) until `jobId` comes back. */
const claim = async (jobId: string, now?: Date): Promise<ClaimedJob> => {
  const claimed = await claimJobs(db.pool, { poolId: "p1", workerId: "w1", limit: 1000, now });
  const others = claimed.filter((c) => c.jobId !== jobId);
  await completeJobs(
    db.pool,
    others.map((c) => ({ id: c.id, leaseToken: c.leaseToken, attempt: c.attempt, result: null })),
  );
  const mine = claimed.find((c) => c.jobId === jobId);
  if (!mine) throw new Error(`job ${jobId} was not claimable`);
  return mine;
};
const running = async (over: Partial<EnqueueInput> = {}): Promise<ClaimedJob> => {
  const [r] = await enqueueJobs(db.pool, [input(over)]);
  return claim(r!.job_id);
};
const row = async (id: string) =>
  (await db.pool.query<{ state: string; checkpoint: unknown; progress: unknown }>(`SELECT state, checkpoint, progress FROM jobs WHERE id = $1`, [id])).rows[0];
const finished = async (jobId: string) =>
  (
    await db.pool.query<{ state: string; checkpoint: unknown; progress: unknown; error: TJobError }>(
      `SELECT state, checkpoint, progress, error FROM finished_jobs WHERE job_id = $1`,
      [jobId],
    )
  ).rows[0];

beforeAll(async () => {
  await controlPlane(db.pool, { queues: [{ id: "q1", lease_seconds: 30, max_runtime_s: 60, retention_s: 3600 }] });
});

describe("saveCheckpoint", () => {
  it("persists the checkpoint under the lease and refuses a stale token, another attempt or a job no longer running", async () => {
    const job = await running();
    const ref = { id: job.id, leaseToken: job.leaseToken, attempt: job.attempt };
    expect(await saveCheckpoint(db.pool, ref, JSON.stringify({ page: 3 }))).toBe(true);
    expect(await row(job.id)).toMatchObject({ state: "RUNNING", checkpoint: { page: 3 } });

    expect(await saveCheckpoint(db.pool, { ...ref, leaseToken: String(BigInt(job.leaseToken) + 1000n) }, `{"page":99}`)).toBe(false);
    expect(await saveCheckpoint(db.pool, { ...ref, attempt: job.attempt + 1 }, `{"page":99}`)).toBe(false);
    expect((await row(job.id))?.checkpoint).toEqual({ page: 3 });

    await failJobs(db.pool, [{ ...ref, outcome: "failed", error: error(1), next: { state: "RETRY_WAIT", runAt: new Date() } }]);
    expect(await saveCheckpoint(db.pool, ref, `{"page":99}`)).toBe(false);
    expect(await row(job.id)).toMatchObject({ state: "RETRY_WAIT", checkpoint: { page: 3 } });
  });
});

describe("the next attempt resumes from the last checkpoint", () => {
  it("after a retry: the claim returns it, and a new attempt starts without progress", async () => {
    const first = await running();
    expect(first.lastCheckpoint).toBeNull();
    const ref = { id: first.id, leaseToken: first.leaseToken, attempt: first.attempt };
    await saveCheckpoint(db.pool, ref, JSON.stringify({ cursor: "abc", done: [1, 2] }));
    await extendLeases(db.pool, [{ ...ref, progress: JSON.stringify({ fraction: 0.4 }) }]);
    await failJobs(db.pool, [{ ...ref, outcome: "failed", error: error(1), next: { state: "RETRY_WAIT", runAt: new Date() } }]);

    const second = await claim(first.jobId);
    expect(second).toMatchObject({ attempt: 2, lastCheckpoint: { cursor: "abc", done: [1, 2] } });
    expect(await row(first.id)).toMatchObject({ checkpoint: { cursor: "abc", done: [1, 2] }, progress: null });
  });

  it("after a lease rescue, whose structured error carries the checkpoint", async () => {
    const first = await running();
    await saveCheckpoint(db.pool, { id: first.id, leaseToken: first.leaseToken, attempt: first.attempt }, `{"step":7}`);
    const later = new Date(Date.now() + 31_000);
    await rescueExpiredLeases(db.pool, { now: later });
    const { rows } = await db.pool.query(`SELECT state, last_error FROM jobs WHERE id = $1`, [first.id]);
    expect(rows[0]).toMatchObject({ state: "READY", last_error: { code: "LEASE_EXPIRED", last_checkpoint: { step: 7 } } });
    expect(await claim(first.jobId, later)).toMatchObject({ attempt: 2, lastCheckpoint: { step: 7 } });
  });

  it("a job the rescue kills keeps it in its dead error and its finished row", async () => {
    const job = await running({ max_attempts: 1 });
    await saveCheckpoint(db.pool, { id: job.id, leaseToken: job.leaseToken, attempt: job.attempt }, `{"step":9}`);
    await rescueExpiredLeases(db.pool, { now: new Date(Date.now() + 31_000) });
    expect(await finished(job.jobId)).toMatchObject({ state: "DEAD", checkpoint: { step: 9 }, error: { code: "LEASE_EXPIRED", last_checkpoint: { step: 9 } } });
  });

  it("a dead job carries its checkpoint and last progress to finished_jobs, and a redrive carries the checkpoint back", async () => {
    const job = await running();
    const ref = { id: job.id, leaseToken: job.leaseToken, attempt: job.attempt };
    await saveCheckpoint(db.pool, ref, `{"rows":120}`);
    await extendLeases(db.pool, [{ ...ref, progress: JSON.stringify({ fraction: 0.5, step: "import" }) }]);
    await failJobs(db.pool, [{ ...ref, outcome: "failed", error: error(1, "DEAD"), next: { state: "DEAD" } }]);
    expect(await finished(job.jobId)).toMatchObject({ state: "DEAD", checkpoint: { rows: 120 }, progress: { fraction: 0.5, step: "import" } });

    await redriveJobs(db.pool, { jobIds: [job.jobId], actor: "alice" });
    expect(await claim(job.jobId)).toMatchObject({ attempt: 1, lastCheckpoint: { rows: 120 } });
  });
});

describe("the job page's read (getJob)", () => {
  it("shows a running job's progress and checkpoint, and a finished job's last ones", async () => {
    const job = await running();
    const ref = { id: job.id, leaseToken: job.leaseToken, attempt: job.attempt };
    expect(await getJob(db.pool, job.jobId)).toMatchObject({ status: "RUNNING", progress: null, checkpoint: null });
    await saveCheckpoint(db.pool, ref, `{"page":2}`);
    await extendLeases(db.pool, [{ ...ref, progress: JSON.stringify({ fraction: 0.5, step: "pages" }) }]);
    expect(await getJob(db.pool, job.jobId)).toMatchObject({ status: "RUNNING", progress: { fraction: 0.5, step: "pages" }, checkpoint: { page: 2 } });
    await completeJobs(db.pool, [{ ...ref, result: "ok" }]);
    expect(await getJob(db.pool, job.jobId)).toMatchObject({ status: "SUCCEEDED", progress: { fraction: 0.5, step: "pages" }, checkpoint: { page: 2 } });
  });
});

describe("progress in the heartbeat", () => {
  it("is written by extendLeases, kept by a heartbeat without one, refused with a stale lease", async () => {
    const job = await running();
    const ref = { id: job.id, leaseToken: job.leaseToken, attempt: job.attempt };
    await extendLeases(db.pool, [{ ...ref, progress: JSON.stringify({ fraction: 0.25, message: "page 1 of 4" }) }]);
    expect((await row(job.id))?.progress).toEqual({ fraction: 0.25, message: "page 1 of 4" });
    await extendLeases(db.pool, [ref]);
    expect((await row(job.id))?.progress).toEqual({ fraction: 0.25, message: "page 1 of 4" });
    const stale = { ...ref, leaseToken: String(BigInt(job.leaseToken) + 1000n), progress: `{"fraction":1}` };
    expect(await extendLeases(db.pool, [stale])).toEqual({ extended: [], lost: [job.id] });
    expect((await row(job.id))?.progress).toEqual({ fraction: 0.25, message: "page 1 of 4" });

    await completeJobs(db.pool, [{ ...ref, result: "ok" }]);
    expect(await finished(job.jobId)).toMatchObject({ state: "SUCCEEDED", progress: { fraction: 0.25, message: "page 1 of 4" } });
  });

  it("a report no heartbeat carried goes with the ack or the failure", async () => {
    const acked = await running();
    await completeJobs(db.pool, [{ id: acked.id, leaseToken: acked.leaseToken, attempt: acked.attempt, result: 1, progress: `{"fraction":1}` }]);
    expect((await finished(acked.jobId))?.progress).toEqual({ fraction: 1 });

    const failed = await running();
    const ref = { id: failed.id, leaseToken: failed.leaseToken, attempt: failed.attempt };
    await extendLeases(db.pool, [{ ...ref, progress: `{"step":"a"}` }]);
    await failJobs(db.pool, [{ ...ref, outcome: "failed", error: error(1), next: { state: "RETRY_WAIT", runAt: new Date() }, progress: `{"step":"b"}` }]);
    expect(await row(failed.id)).toMatchObject({ state: "RETRY_WAIT", progress: { step: "b" } });
    const again = await claim(failed.jobId);
    const ref2 = { id: again.id, leaseToken: again.leaseToken, attempt: again.attempt };
    await failJobs(db.pool, [{ ...ref2, outcome: "failed", error: error(2, "DEAD"), next: { state: "DEAD" }, progress: `{"step":"c"}` }]);
    expect((await finished(failed.jobId))?.progress).toEqual({ step: "c" });
  });

  it("keeps the heartbeat a HOT update: neither column is in an index of jobs", async () => {
    const { rows } = await db.pool.query<{ indexdef: string }>(`SELECT indexdef FROM pg_indexes WHERE tablename = 'jobs'`);
    expect(rows.length).toBeGreaterThan(0);
    for (const { indexdef } of rows) expect(indexdef).not.toMatch(/progress|checkpoint/);

    const job = await running();
    const client = await db.pool.connect();
    try {
      // The backend's counters not yet flushed to the statistics: read before and after.
      const counters = async () =>
        (
          await client.query<{ updated: number; hot: number }>(
            `SELECT pg_stat_get_xact_tuples_updated('jobs'::regclass)::int AS updated, pg_stat_get_xact_tuples_hot_updated('jobs'::regclass)::int AS hot`,
          )
        ).rows[0]!;
      await client.query("BEGIN");
      const before = await counters();
      await extendLeases(client, [{ id: job.id, leaseToken: job.leaseToken, attempt: job.attempt, progress: JSON.stringify({ message: "x".repeat(200) }) }]);
      const after = await counters();
      expect({ updated: after.updated - before.updated, hot: after.hot - before.hot }).toEqual({ updated: 1, hot: 1 });
      await client.query("ROLLBACK");
    } finally {
      client.release();
    }
  });
});
