// Dead jobs for the failure-group tests, through the real paths: enqueue, claim, failJobs to DEAD
// (the triggers of sql/routines/dlq.sql then maintain the groups). Integration tests only.
import type { TJobError } from "@porter/contracts";
import type { Db } from "../db";
import { claimJobs } from "../sql/claim-jobs";
import { enqueueJobs } from "../sql/enqueue-jobs";
import { failJobs } from "../sql/fail-jobs";

let seq = 0;

/**
 * Enqueues `n` jobs of `jobType` (max_attempts 1), claims exactly those from `poolId` and fails
 * them to DEAD with `message` (a function of the index for varying ids), at `now` if given.
 * Returns the job ids and the group id they died into (each job's, in order).
 */
export const killJobs = async (
  db: Db,
  spec: {
    poolId: string;
    jobType: string;
    n?: number;
    tenant?: (i: number) => string;
    message: (i: number) => string;
    error?: Partial<TJobError>;
    now?: Date;
  },
): Promise<{ jobIds: string[]; groupIds: string[] }> => {
  const n = spec.n ?? 1;
  const enqueued = await enqueueJobs(
    db,
    Array.from({ length: n }, (_, i) => ({
      job_type: spec.jobType,
      tenant_id: spec.tenant?.(i) ?? "tenant_A",
      payload: { i },
      idempotency_key: `dlq-fixture-${process.pid}-${++seq}`,
      max_attempts: 1,
    })),
  );
  const order = new Map(enqueued.map((e, i) => [e.job_id, i]));
  const claimed = [];
  while (claimed.length < n) {
    const batch = await claimJobs(db, { poolId: spec.poolId, workerId: `fixture-${seq}`, limit: n });
    if (batch.length === 0) throw new Error(`killJobs: claimed ${claimed.length} of ${n}`);
    claimed.push(...batch.filter((c) => order.has(c.jobId)));
  }
  await failJobs(
    db,
    claimed.map((c) => {
      const i = order.get(c.jobId)!;
      const error: TJobError = {
        code: "E_FIXTURE",
        class: "permanent",
        message: spec.message(i),
        worker_version: "fixture-1",
        attempt: c.attempt,
        trace_id: c.traceId,
        last_checkpoint: null,
        ...spec.error,
      };
      return { id: c.id, leaseToken: c.leaseToken, attempt: c.attempt, outcome: "failed" as const, error, next: { state: "DEAD" as const } };
    }),
    spec.now,
  );
  const jobIds = enqueued.map((e) => e.job_id);
  const { rows } = await db.query<{ job_id: string; id: string }>(
    `SELECT f.job_id::text, g.id::text FROM finished_jobs f JOIN dlq_groups g ON g.fingerprint = f.dlq_fingerprint WHERE f.job_id = ANY($1::uuid[])`,
    [jobIds],
  );
  const byJob = new Map(rows.map((r) => [r.job_id, r.id]));
  return { jobIds, groupIds: jobIds.map((id) => byJob.get(id)!) };
};
