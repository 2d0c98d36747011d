// A job's attempts with their wait (available → start) and run time, on a moved clock: enqueue,
// a claim 1.234 s later, a failure whose retry is due 2 s later, a claim 0.5 s after that, an ack.
import type { TJobError } from "@porter/contracts";
import { useTestDatabase } from "@porter/db/testing/test-database";
import { beforeAll, describe, expect, it } from "vitest";
import { claimJobs } from "../sql/claim-jobs";
import { completeJobs } from "../sql/complete-jobs";
import { enqueueJobs } from "../sql/enqueue-jobs";
import { failJobs } from "../sql/fail-jobs";
import { controlPlane } from "../testing/control-plane-factory";
import { listAttempts } from "./console-reads";

const db = useTestDatabase();
const T0 = new Date(Math.floor(Date.now() / 1000) * 1000 - 60_000);
const at = (ms: number) => new Date(T0.getTime() + ms);
const boom: TJobError = { code: "BOOM", class: "retryable", message: "boom", worker_version: "t", attempt: 1, trace_id: "t", last_checkpoint: null };
let jobId: string;

beforeAll(async () => {
  await controlPlane(db.pool, { queues: [{ id: "q1", lease_seconds: 600 }] });
  const [r] = await enqueueJobs(db.pool, [{ job_type: "q1.job", tenant_id: "tenant_A", payload: {}, idempotency_key: "w-1" }], { now: T0 });
  jobId = r!.job_id;
  const [first] = await claimJobs(db.pool, { poolId: "p1", workerId: "w1", limit: 1, now: at(1_234) });
  await failJobs(
    db.pool,
    [{ id: first!.id, leaseToken: first!.leaseToken, attempt: 1, outcome: "failed", error: boom, next: { state: "RETRY_WAIT", runAt: at(3_334) } }],
    at(1_334),
  );
  const [second] = await claimJobs(db.pool, { poolId: "p1", workerId: "w2", limit: 1, now: at(3_834) });
  await completeJobs(db.pool, [{ id: second!.id, leaseToken: second!.leaseToken, attempt: 2, result: {} }], at(4_034));
});

describe("a job's attempts", () => {
  it("carry the wait from enqueue, then from the retry's time, and the run time, in ms", async () => {
    const attempts = await listAttempts(db.pool, jobId);
    expect(attempts).toHaveLength(2);
    expect(attempts[0]).toMatchObject({
      run: 1,
      worker_id: "w1",
      available_at: T0.toISOString(),
      started_at: at(1_234).toISOString(),
      wait_ms: 1_234,
      duration_ms: 100,
      outcome: "failed",
      retry_at: at(3_334).toISOString(),
    });
    expect(attempts[1]).toMatchObject({
      run: 2,
      worker_id: "w2",
      available_at: at(3_334).toISOString(),
      started_at: at(3_834).toISOString(),
      wait_ms: 500,
      duration_ms: 200,
      outcome: "succeeded",
    });
  });
});
