import type { Db } from "../db";

/** A job as its worker receives it, with the lease and the queue policy its attempt runs under. */
export type ClaimedJob = {
  id: string;
  jobId: string;
  jobType: string;
  queueId: string;
  tenantId: string;
  payload: Record<string, unknown>;
  priority: number;
  idempotencyKey: string;
  attempt: number;
  maxAttempts: number;
  timeoutS: number;
  notBefore: Date | null;
  deadlineAt: Date | null;
  runAt: Date;
  traceId: string;
  createdAt: Date;
  contractVersion: string;
  claimedAt: Date;
  leaseToken: string;
  leaseUntil: Date;
  leaseSeconds: number;
  backoffBaseMs: number;
  backoffCapMs: number;
  cancelRequested: boolean;
};

type ClaimRow = {
  id: string;
  job_id: string;
  job_type: string;
  queue_id: string;
  tenant_id: string;
  payload: Record<string, unknown>;
  priority: number;
  idempotency_key: string;
  attempt: number;
  max_attempts: number;
  timeout_s: number;
  not_before: Date | null;
  deadline_at: Date | null;
  run_at: Date;
  trace_id: string;
  created_at: Date;
  contract_version: string;
  claimed_at: Date;
  lease_token: string;
  lease_until: Date;
  lease_seconds: number;
  backoff_base_ms: number;
  backoff_cap_ms: number;
  cancel_requested_at: Date | null;
};

export const toClaimedJob = (r: ClaimRow): ClaimedJob => ({
  id: r.id,
  jobId: r.job_id,
  jobType: r.job_type,
  queueId: r.queue_id,
  tenantId: r.tenant_id,
  payload: r.payload,
  priority: r.priority,
  idempotencyKey: r.idempotency_key,
  attempt: r.attempt,
  maxAttempts: r.max_attempts,
  timeoutS: r.timeout_s,
  notBefore: r.not_before,
  deadlineAt: r.deadline_at,
  runAt: r.run_at,
  traceId: r.trace_id,
  createdAt: r.created_at,
  contractVersion: r.contract_version,
  claimedAt: r.claimed_at,
  leaseToken: r.lease_token,
  leaseUntil: r.lease_until,
  leaseSeconds: r.lease_seconds,
  backoffBaseMs: r.backoff_base_ms,
  backoffCapMs: r.backoff_cap_ms,
  cancelRequested: r.cancel_requested_at !== null,
});

/**
 * Claims up to `limit` jobs of a pool for one worker, atomically, in one round trip: the
 * `porter_claim` function (prisma/migrations/20261130000100_hot_path). Per unpaused queue of the
 * pool it scans `jobs_claim_idx` in claim order (priority, then run_at, then id) with FOR UPDATE
 * SKIP LOCKED, limited by the queue's free room under its concurrency cap; the union is cut to the
 * pool's free room and `limit` and updated in one statement, with one fencing token for the batch
 * (a re-claim always draws a new one). When a cap applies, an advisory lock on the pool serializes
 * count-then-claim across processes. Claims commit with synchronous_commit off: losing one in a
 * crash only means its lease expires and the job runs again. A named prepared statement, so the
 * call is planned once per connection.
 */
export const claimJobs = async (
  db: Db,
  params: { poolId: string; workerId: string; limit: number; now?: Date },
): Promise<ClaimedJob[]> => {
  if (params.limit <= 0) return [];
  const { rows } = await db.query<ClaimRow>({
    name: "porter.claim",
    text: `SELECT id::text, job_id::text, job_type, queue_id, tenant_id, payload, priority, idempotency_key, attempt,
                  max_attempts, timeout_s, not_before, deadline_at, run_at, trace_id, created_at, contract_version,
                  claimed_at, lease_token::text, lease_until, lease_seconds, backoff_base_ms, backoff_cap_ms,
                  cancel_requested_at
             FROM porter_claim($1, $2, $3, $4)`,
    values: [params.poolId, params.workerId, params.limit, params.now ?? null],
  });
  return rows.map(toClaimedJob);
};
