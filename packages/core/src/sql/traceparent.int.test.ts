import type { TJobError } from "@porter/contracts";
import { useTestDatabase } from "@porter/db/testing/test-database";
import { beforeAll, describe, expect, it } from "vitest";
import { getJob } from "../reads/get-job";
import { controlPlane } from "../testing/control-plane-factory";
import { type ClaimedJob, claimJobs } from "./claim-jobs";
import { completeJobs } from "./complete-jobs";
import { enqueueJobs } from "./enqueue-jobs";
import { failJobs } from "./fail-jobs";
import { redriveJobs } from "./redrive-jobs";
import { rescueExpiredLeases } from "./rescue-expired-leases";

const db = useTestDatabase();
const TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT = `00-${TRACE_ID}-00f067aa0ba902b7-01`;
const error = (attempt: number, next: string): TJobError => ({
  code: "BOOM",
  class: next === "DEAD" ? "permanent" : "retryable",
  message: "boom",
  worker_version: "test",
  attempt,
  trace_id: TRACE_ID,
  last_checkpoint: null,
});

/** Claims (acking any other job claimed) until `jobId` comes back. */
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

beforeAll(async () => {
  await controlPlane(db.pool, { queues: [{ id: "q1", lease_seconds: 30, max_runtime_s: 60, retention_s: 3600, backoff_base_ms: 1, backoff_cap_ms: 1 }] });
});

describe("a job's traceparent", () => {
  it("is stored at enqueue (trace_id its trace id), returned by every claim, kept across a retry, a lease rescue, death and a redrive", async () => {
    const [r] = await enqueueJobs(db.pool, [
      { job_type: "q1.job", tenant_id: "tenant_A", payload: {}, idempotency_key: "tp-1", traceparent: PARENT, max_attempts: 3 },
    ]);
    const jobId = r!.job_id;
    const first = await claim(jobId);
    expect(first).toMatchObject({ traceId: TRACE_ID, traceparent: PARENT, attempt: 1 });

    // A retry: the row stays, and so does its traceparent.
    await failJobs(db.pool, [
      {
        id: first.id,
        leaseToken: first.leaseToken,
        attempt: 1,
        outcome: "failed",
        error: error(1, "RETRY_WAIT"),
        next: { state: "RETRY_WAIT", runAt: new Date() },
      },
    ]);
    const second = await claim(jobId, new Date(Date.now() + 1000));
    expect(second).toMatchObject({ traceparent: PARENT, attempt: 2 });

    // A lease rescue (the worker died): back to READY with it.
    await rescueExpiredLeases(db.pool, { now: new Date(Date.now() + 61_000) });
    const third = await claim(jobId, new Date(Date.now() + 62_000));
    expect(third).toMatchObject({ traceparent: PARENT, attempt: 3 });

    // Dead: finished_jobs has it, and so does the job page's read.
    await failJobs(db.pool, [{ id: third.id, leaseToken: third.leaseToken, attempt: 3, outcome: "failed", error: error(3, "DEAD"), next: { state: "DEAD" } }]);
    const { rows } = await db.pool.query(`SELECT state, trace_id, traceparent FROM finished_jobs WHERE job_id = $1`, [jobId]);
    expect(rows).toEqual([{ state: "DEAD", trace_id: TRACE_ID, traceparent: PARENT }]);
    expect(await getJob(db.pool, jobId)).toMatchObject({ status: "DEAD", trace_id: TRACE_ID, traceparent: PARENT });

    // A redrive brings it back: the redriven attempts stay in the job's trace.
    await redriveJobs(db.pool, { jobIds: [jobId], actor: "alice" });
    expect(await claim(jobId, new Date(Date.now() + 63_000))).toMatchObject({ traceparent: PARENT, attempt: 1 });
    expect(await getJob(db.pool, jobId)).toMatchObject({ status: "RUNNING", traceparent: PARENT });
  });

  it("is null for a job enqueued without one (no SDK registered: no span context to stamp), whose trace_id is derived from its id", async () => {
    const [r] = await enqueueJobs(db.pool, [{ job_type: "q1.job", tenant_id: "tenant_A", payload: {}, idempotency_key: "tp-2" }]);
    const job = await claim(r!.job_id);
    expect(job.traceparent).toBeNull();
    expect(job.traceId).toBe(r!.job_id.replace(/-/g, ""));
    expect((await getJob(db.pool, r!.job_id))?.traceparent).toBeNull();
  });

  it("stamps the call's traceparent (the API's header) on jobs without a trace of their own, in the coalesced path too", async () => {
    const call = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    const [single] = await enqueueJobs(db.pool, [{ job_type: "q1.job", tenant_id: "tenant_A", payload: {}, idempotency_key: "tp-3" }], { traceparent: call });
    const batch = await enqueueJobs(
      db.pool,
      [
        { job_type: "q1.job", tenant_id: "tenant_A", payload: {}, idempotency_key: "tp-4" },
        { job_type: "q1.job", tenant_id: "tenant_A", payload: {}, idempotency_key: "tp-5", traceparent: PARENT },
        { job_type: "q1.job", tenant_id: "tenant_A", payload: {}, idempotency_key: "tp-6", trace_id: "mine" },
      ],
      { traceparent: call },
    );
    const { rows } = await db.pool.query(
      `SELECT idempotency_key, trace_id, traceparent FROM jobs WHERE idempotency_key LIKE 'tp-%' AND job_id = ANY($1) ORDER BY idempotency_key`,
      [[single!.job_id, ...batch.map((b) => b.job_id)]],
    );
    expect(rows).toEqual([
      { idempotency_key: "tp-3", trace_id: "0af7651916cd43dd8448eb211c80319c", traceparent: call },
      { idempotency_key: "tp-4", trace_id: "0af7651916cd43dd8448eb211c80319c", traceparent: call },
      { idempotency_key: "tp-5", trace_id: TRACE_ID, traceparent: PARENT },
      { idempotency_key: "tp-6", trace_id: "mine", traceparent: null },
    ]);
  });

  it("is in no index of jobs (a claim or heartbeat stays a HOT update)", async () => {
    const { rows } = await db.pool.query<{ indexdef: string }>(`SELECT indexdef FROM pg_indexes WHERE tablename = 'jobs'`);
    expect(rows.length).toBeGreaterThan(0);
    for (const { indexdef } of rows) expect(indexdef).not.toMatch(/traceparent/);
  });
});
