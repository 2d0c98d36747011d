import { useTestDatabase } from "@porter/db/testing/test-database";
import { beforeAll, describe, expect, it } from "vitest";
import { controlPlane } from "../testing/fixtures";
import { cancelJob } from "./cancel-job";
import { claimJobs } from "./claim-jobs";
import { enqueueJobs } from "./enqueue-jobs";
import { readCancelRequest } from "./read-cancel-request";
import { readPoolSettings } from "./read-pool-settings";

const db = useTestDatabase();

beforeAll(async () => {
  await controlPlane(db.pool, { queues: [{ id: "q1" }] });
  await db.pool.query(`UPDATE pools SET worker_concurrency = 7 WHERE id = 'p1'`);
});

describe("what a worker reads", () => {
  it("readPoolSettings: the pool's worker_concurrency; an unknown pool is undefined", async () => {
    expect(await readPoolSettings(db.pool, "p1")).toEqual({ workerConcurrency: 7 });
    expect(await readPoolSettings(db.pool, "no-such-pool")).toBeUndefined();
  });

  it("readCancelRequest: the reason while the lease is this attempt's, nothing before the request or for another token", async () => {
    const [enqueued] = await enqueueJobs(db.pool, [{ job_type: "q1.job", tenant_id: "tenant_A", payload: {}, idempotency_key: "cancel-read-1" }]);
    const [job] = await claimJobs(db.pool, { poolId: "p1", workerId: "w1", limit: 1 });
    expect(job?.jobId).toBe(enqueued!.job_id);
    expect(await readCancelRequest(db.pool, job!)).toBeUndefined();
    await cancelJob(db.pool, { jobId: job!.jobId, actor: "test", reason: "operator asked" });
    expect(await readCancelRequest(db.pool, job!)).toEqual({ reason: "operator asked" });
    expect(await readCancelRequest(db.pool, { id: job!.id, leaseToken: String(BigInt(job!.leaseToken) + 1n) })).toBeUndefined();
  });
});
