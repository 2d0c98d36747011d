// What a worker runs now and what it ran (the console's pools and worker pages). Bounded reads: a
// worker's RUNNING jobs are read through jobs_running_idx over its pool's queues (RUNNING rows only,
// at most the pool's running work; lease_owner is in no index, so heartbeats stay HOT updates); its
// recent attempts through job_attempts_worker_idx and, for successes (kept on the finished row,
// not in job_attempts), finished_jobs' (queue, state, finished_at) index over its lifetime.
import type { Db } from "../db";

/** A job a worker holds the lease of now. */
export type WorkerRunningJob = {
  job_id: string;
  job_type: string;
  queue_id: string;
  tenant_id: string;
  attempt: number;
  worker_id: string;
  claimed_at: string;
  /** When its handler started (null while it waits in the worker's prefetch buffer). */
  started_at: string | null;
  lease_until: string | null;
  /** ms since the claim, and until the lease expires (negative: expired), by the database's clock. */
  claimed_ms_ago: number;
  lease_expires_in_ms: number | null;
};

/**
 * The RUNNING jobs leased to each of `workerIds` (a pool's workers, or one), oldest claim first. A
 * worker holds at most its slots plus its prefetch buffer; `limitPerWorker` (default 500) bounds
 * the read anyway. One statement for every worker asked about.
 */
export const listWorkerRunningJobs = async (db: Db, params: { workerIds: readonly string[]; limitPerWorker?: number }): Promise<WorkerRunningJob[]> => {
  if (params.workerIds.length === 0) return [];
  const limit = Math.min(Math.max(params.limitPerWorker ?? 500, 1), 500);
  const { rows } = await db.query<{
    job_id: string;
    job_type: string;
    queue_id: string;
    tenant_id: string;
    attempt: number;
    lease_owner: string;
    claimed_at: Date;
    started_at: Date | null;
    lease_until: Date | null;
    claimed_ms_ago: number;
    lease_expires_in_ms: number | null;
  }>(
    `SELECT r.job_id, r.job_type, r.queue_id, r.tenant_id, r.attempt, r.lease_owner, r.claimed_at, r.started_at, r.lease_until,
            r.claimed_ms_ago, r.lease_expires_in_ms
       FROM (
         SELECT j.id, j.job_id::text, j.job_type, j.queue_id, j.tenant_id, j.attempt, j.lease_owner, j.claimed_at, j.started_at,
                j.lease_until, (extract(epoch FROM now() - j.claimed_at) * 1000)::float8 AS claimed_ms_ago,
                (extract(epoch FROM j.lease_until - now()) * 1000)::float8 AS lease_expires_in_ms,
                row_number() OVER (PARTITION BY j.lease_owner ORDER BY j.claimed_at, j.id) AS rn
           FROM jobs j
          WHERE j.state = 'RUNNING' AND j.lease_owner = ANY($1)
            AND j.queue_id IN (SELECT q.id FROM queues q JOIN workers w ON w.pool_id = q.pool_id WHERE w.id = ANY($1))
       ) r
      WHERE r.rn <= $2
      ORDER BY r.lease_owner, r.claimed_at, r.id`,
    [params.workerIds, limit],
  );
  return rows.map((r) => ({
    job_id: r.job_id,
    job_type: r.job_type,
    queue_id: r.queue_id,
    tenant_id: r.tenant_id,
    attempt: r.attempt,
    worker_id: r.lease_owner,
    claimed_at: r.claimed_at.toISOString(),
    started_at: r.started_at?.toISOString() ?? null,
    lease_until: r.lease_until?.toISOString() ?? null,
    claimed_ms_ago: Math.max(0, Math.round(r.claimed_ms_ago)),
    lease_expires_in_ms: r.lease_expires_in_ms === null ? null : Math.round(r.lease_expires_in_ms),
  }));
};

/** One attempt a worker ran, for its page. */
export type WorkerAttempt = {
  job_id: string;
  job_type: string;
  queue_id: string;
  tenant_id: string;
  attempt: number;
  started_at: string;
  finished_at: string;
  run_ms: number;
  outcome: string;
  error_code: string | null;
};

/**
 * A worker's ended attempts, newest first, `limit` per page (default 50) before `cursor` (the
 * previous page's `next_cursor`: the last row's finish in µs since the epoch and its job id). Failed
 * and handed-back attempts come from job_attempts (job_attempts_worker_idx); successes from the
 * finished rows of its pool's queues since the worker started (finished_jobs' queue/state/finished_at
 * index: a scan that stops after `limit` of this worker's).
 */
export const listWorkerAttempts = async (
  db: Db,
  params: { workerId: string; limit?: number; cursor?: string | null },
): Promise<{ attempts: WorkerAttempt[]; next_cursor: string | null }> => {
  const limit = Math.min(Math.max(params.limit ?? 50, 1), 500);
  const m = params.cursor ? /^(\d{1,17})\.([0-9a-f-]{36})$/.exec(params.cursor) : null;
  const [afterUs, afterJob] = m ? [m[1]!, m[2]!] : [null, null];
  const { rows } = await db.query<{
    job_id: string;
    job_type: string;
    queue_id: string;
    tenant_id: string;
    attempt: number;
    started_at: Date;
    finished_at: Date;
    finished_us: string;
    outcome: string;
    error_code: string | null;
  }>(
    `WITH w AS (SELECT id, pool_id, started_at FROM workers WHERE id = $1),
     cur AS (SELECT CASE WHEN $3::bigint IS NULL THEN 'infinity'::timestamptz
                         ELSE timestamptz 'epoch' + $3::bigint * interval '1 microsecond' END AS at,
                    coalesce($4::uuid, 'ffffffff-ffff-ffff-ffff-ffffffffffff'::uuid) AS job),
     failed AS (
       SELECT a.job_id, a.attempt, a.started_at, a.finished_at, a.outcome::text AS outcome, a.error ->> 'code' AS error_code
         FROM job_attempts a, cur
        WHERE a.worker_id = $1 AND (a.finished_at, a.job_id) < (cur.at, cur.job)
        ORDER BY a.finished_at DESC, a.job_id DESC LIMIT $2 + 1
     ),
     ok AS (
       SELECT s.* FROM w JOIN queues q ON q.pool_id = w.pool_id, cur, LATERAL (
         SELECT f.job_id, f.attempt, coalesce(f.claimed_at, f.finished_at) AS started_at, f.finished_at, 'succeeded' AS outcome, NULL::text AS error_code
           FROM finished_jobs f
          WHERE f.queue_id = q.id AND f.state = 'SUCCEEDED' AND f.finished_at >= w.started_at AND f.last_worker = $1
            AND (f.finished_at, f.job_id) < (cur.at, cur.job)
            AND NOT EXISTS (SELECT 1 FROM job_attempts a WHERE a.job_id = f.job_id AND a.outcome = 'succeeded')
          ORDER BY f.finished_at DESC LIMIT $2 + 1) s
     ),
     page AS (
       SELECT * FROM (SELECT * FROM failed UNION ALL SELECT * FROM ok) u ORDER BY u.finished_at DESC, u.job_id DESC LIMIT $2 + 1
     )
     SELECT p.job_id::text, coalesce(j.job_type, f.job_type) AS job_type, coalesce(j.queue_id, f.queue_id) AS queue_id,
            coalesce(j.tenant_id, f.tenant_id) AS tenant_id, p.attempt, p.started_at, p.finished_at,
            (extract(epoch FROM p.finished_at) * 1000000)::bigint::text AS finished_us, p.outcome, p.error_code
       FROM page p
       LEFT JOIN jobs j ON j.job_id = p.job_id
       LEFT JOIN finished_jobs f ON f.job_id = p.job_id
      ORDER BY p.finished_at DESC, p.job_id DESC`,
    [params.workerId, limit, afterUs, afterJob],
  );
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  return {
    attempts: page.map((r) => ({
      job_id: r.job_id,
      job_type: r.job_type,
      queue_id: r.queue_id,
      tenant_id: r.tenant_id,
      attempt: r.attempt,
      started_at: r.started_at.toISOString(),
      finished_at: r.finished_at.toISOString(),
      run_ms: r.finished_at.getTime() - r.started_at.getTime(),
      outcome: r.outcome,
      error_code: r.error_code,
    })),
    next_cursor: rows.length > limit && last ? `${last.finished_us}.${last.job_id}` : null,
  };
};
