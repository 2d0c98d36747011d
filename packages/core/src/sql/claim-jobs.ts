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
  deadlineAt: Date | null;
  traceId: string;
  createdAt: Date;
  claimedAt: Date;
  leaseToken: string;
  leaseUntil: Date;
  leaseSeconds: number;
  backoffBaseMs: number;
  backoffCapMs: number;
  cancelRequested: boolean;
  /** The queue's resource key (a provider's 429 reported against it slows it for everyone). */
  resourceKeyId: string | null;
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
  deadline_at: Date | null;
  trace_id: string;
  created_at: Date;
  claimed_at: Date;
  lease_token: string;
  lease_until: Date;
  lease_seconds: number;
  backoff_base_ms: number;
  backoff_cap_ms: number;
  cancel_requested: boolean;
  resource_key_id: string | null;
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
  deadlineAt: r.deadline_at,
  traceId: r.trace_id,
  createdAt: r.created_at,
  claimedAt: r.claimed_at,
  leaseToken: r.lease_token,
  leaseUntil: r.lease_until,
  leaseSeconds: r.lease_seconds,
  backoffBaseMs: r.backoff_base_ms,
  backoffCapMs: r.backoff_cap_ms,
  cancelRequested: r.cancel_requested,
  resourceKeyId: r.resource_key_id,
});

/**
 * Claims up to `limit` jobs of a pool for one worker, atomically, in one round trip: the
 * `porter_claim` function (prisma/migrations/20261130020000_scheduling, with the fast path of
 * 20261201000000_claim_fast_path when no limit applies to the pool; docs/scheduling.md).
 *
 * Order: per (queue, tenant with claimable work) an index scan of `jobs_claim_idx` in
 * (priority DESC, vft) order with FOR UPDATE SKIP LOCKED — vft being the job's virtual finish
 * time, which interleaves tenants by weight — merged across tenants and queues in the same order.
 * Limits, all counted in the statement: queue concurrency cap, pool cap, tenant running quota
 * (across pools), resource-key concurrency (configured or adaptive; none while throttled), tenant
 * and resource-key start rates (token buckets, debited in the same statement). Count-then-claim is
 * serialized by an advisory lock (global when a cross-pool limit exists, per pool for pool-local
 * caps), so no limit is exceeded at any instant across any number of workers. One fencing token
 * per batch. Claims commit with synchronous_commit off: a claim lost in a crash only means its
 * lease expires. A named prepared statement, planned once per connection.
 */
export const claimJobs = async (
  db: Db,
  params: { poolId: string; workerId: string; limit: number; now?: Date },
): Promise<ClaimedJob[]> => {
  if (params.limit <= 0) return [];
  const { rows } = await db.query<ClaimRow>({
    name: "porter.claim",
    text: `SELECT id::text, job_id::text, job_type, queue_id, tenant_id, payload, priority, idempotency_key, attempt,
                  max_attempts, timeout_s, deadline_at, trace_id, created_at, claimed_at, lease_token::text,
                  lease_until, lease_seconds, backoff_base_ms, backoff_cap_ms, cancel_requested, resource_key_id
             FROM porter_claim($1, $2, $3, $4)`,
    values: [params.poolId, params.workerId, params.limit, params.now ?? null],
  });
  return rows.map(toClaimedJob);
};
