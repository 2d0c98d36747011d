// Dead jobs for the failure-group tests, through the real paths: enqueue, claim, failJobs to DEAD
// (the triggers of sql/routines/dlq.sql then maintain the groups). Integration tests only.
import type { TJobError } from "@porter/contracts";
import type { Db } from "../db";
import { type ClaimedJob, claimJobs } from "../sql/claim-jobs";
import { enqueueJobs } from "../sql/enqueue-jobs";
import { failJobs } from "../sql/fail-jobs";

let seq = 0;

type DeathSpec = {
  poolId: string;
  jobType: string;
  n?: number;
  tenant?: (i: number) => string;
  message: (i: number) => string;
  error?: Partial<TJobError>;
  now?: Date;
};

/**
 * Enqueues `n` jobs of `jobType` (max_attempts 1) and claims exactly those from `poolId`; `fail()`
 * then fails them to DEAD in one statement with `message` (a function of the index, for varying
 * ids), at `now` if given. Split so a test can prepare several sets, then fail them concurrently.
 */
export const prepareDeaths = async (db: Db, spec: DeathSpec): Promise<{ jobIds: string[]; fail: (on?: Db) => Promise<void> }> => {
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
  const claimed: ClaimedJob[] = [];
  while (claimed.length < n) {
    const batch = await claimJobs(db, { poolId: spec.poolId, workerId: `fixture-${seq}`, limit: n });
    if (batch.length === 0) throw new Error(`prepareDeaths: claimed ${claimed.length} of ${n}`);
    claimed.push(...batch.filter((c) => order.has(c.jobId)));
  }
  const fail = async (on: Db = db) => {
    await failJobs(
      on,
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
  };
  return { jobIds: enqueued.map((e) => e.job_id), fail };
};

/**
 * {@link prepareDeaths} and its `fail()` at once (not for concurrent use on one pool: claims of
 * concurrent calls would take each other's jobs). Returns the job ids and the group each died into.
 */
export const killJobs = async (db: Db, spec: DeathSpec): Promise<{ jobIds: string[]; groupIds: string[] }> => {
  const { jobIds, fail } = await prepareDeaths(db, spec);
  await fail();
  const { rows } = await db.query<{ job_id: string; id: string }>(
    `SELECT f.job_id::text, g.id::text FROM finished_jobs f JOIN dlq_groups g ON g.fingerprint = f.dlq_fingerprint WHERE f.job_id = ANY($1::uuid[])`,
    [jobIds],
  );
  const byJob = new Map(rows.map((r) => [r.job_id, r.id]));
  return { jobIds, groupIds: jobIds.map((id) => byJob.get(id)!) };
};
