import type { Db } from "../db";
import { inTransaction } from "../db";

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
 * Claims up to `limit` jobs of a pool for one worker, atomically.
 *
 * Shape: per unpaused queue of the pool, a LATERAL index scan of `jobs_claim_idx` (claim order:
 * priority, then run_at, then id) with FOR UPDATE SKIP LOCKED, limited by the queue's free room
 * under its concurrency cap; the union is cut to the pool's free room and `limit`, then updated
 * in one statement. The CTE is an optimisation fence: the planner cannot update more rows than
 * selected. One fencing token is drawn for the whole batch (a re-claim always draws a new one).
 *
 * Caps (queue, pool) are counts of RUNNING rows. Counting and claiming must not race across
 * processes, so when a cap applies the statement runs after a transaction-level advisory lock on
 * the pool, and a fresh statement snapshot sees every claim committed before the lock was granted.
 * Claims are written with synchronous_commit off: losing one in a crash only means its lease
 * expires and the job runs again.
 */
export const claimJobs = async (
  db: Db,
  params: { poolId: string; workerId: string; limit: number; now?: Date },
): Promise<ClaimedJob[]> => {
  if (params.limit <= 0) return [];
  return inTransaction(db, async (client) => {
    await client.query(
      `SELECT set_config('synchronous_commit', 'off', true),
              CASE WHEN EXISTS (SELECT 1 FROM pools WHERE id = $1 AND concurrency_cap IS NOT NULL)
                     OR EXISTS (SELECT 1 FROM queues WHERE pool_id = $1 AND concurrency_cap IS NOT NULL AND NOT paused)
                   THEN pg_advisory_xact_lock(hashtext('porter.claim:' || $1)) END`,
      [params.poolId],
    );
    const { rows } = await client.query<ClaimRow>(
      `WITH now AS (SELECT coalesce($4::timestamptz, clock_timestamp()) AS t),
       token AS (SELECT nextval('lease_token_seq') AS t),
       room AS (
         SELECT q.id,
                CASE WHEN q.concurrency_cap IS NULL THEN $3::int
                     ELSE greatest(0, q.concurrency_cap - (SELECT count(*) FROM jobs r
                                                             WHERE r.state = 'RUNNING' AND r.queue_id = q.id))::int
                END AS free
           FROM queues q
          WHERE q.pool_id = $1 AND NOT q.paused
       ),
       pool_room AS (
         SELECT CASE WHEN p.concurrency_cap IS NULL THEN $3::int
                     ELSE greatest(0, p.concurrency_cap - (SELECT count(*) FROM jobs r JOIN queues q ON q.id = r.queue_id
                                                             WHERE r.state = 'RUNNING' AND q.pool_id = p.id))::int
                END AS free
           FROM pools p WHERE p.id = $1
       ),
       picked AS (
         SELECT c.id
           FROM room
           CROSS JOIN LATERAL (
             SELECT j.id, j.priority, j.run_at
               FROM jobs j
              WHERE j.queue_id = room.id
                AND j.state IN ('READY', 'RETRY_WAIT')
                AND j.run_at <= (SELECT t FROM now)
                AND (j.deadline_at IS NULL OR j.deadline_at > (SELECT t FROM now))
              ORDER BY j.priority DESC, j.run_at, j.id
              LIMIT least(room.free, $3::int)
              FOR UPDATE SKIP LOCKED
           ) c
          ORDER BY c.priority DESC, c.run_at, c.id
          LIMIT least($3::int, coalesce((SELECT free FROM pool_room), 0))
       )
       UPDATE jobs j
          SET state = 'RUNNING',
              attempt = j.attempt + 1,
              claimed_at = (SELECT t FROM now),
              lease_owner = $2,
              lease_token = (SELECT t FROM token),
              lease_until = least((SELECT t FROM now) + q.lease_seconds * interval '1 second',
                                  coalesce(j.deadline_at, 'infinity'),
                                  (SELECT t FROM now) + q.max_runtime_s * interval '1 second'),
              heartbeat_at = NULL
         FROM picked, queues q
        WHERE j.id = picked.id AND q.id = j.queue_id
       RETURNING j.id, j.job_id, j.job_type, j.queue_id, j.tenant_id, j.payload, j.priority, j.idempotency_key,
                 j.attempt, j.max_attempts, j.timeout_s, j.not_before, j.deadline_at, j.run_at, j.trace_id,
                 j.created_at, j.contract_version, j.claimed_at, j.lease_token, j.lease_until,
                 q.lease_seconds, q.backoff_base_ms, q.backoff_cap_ms, j.cancel_requested_at`,
      [params.poolId, params.workerId, params.limit, params.now ?? null],
    );
    return rows.map(toClaimedJob);
  });
};
