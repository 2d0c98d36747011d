import { JOB_STATES, type TJobState } from "@porter/contracts";
import type { ControlDb } from "@porter/db/prisma";
import type { Db } from "../db";
import { isWorkerLost } from "../policy/worker-liveness";
import { isRunningById } from "../sql/fence";
import { oldestClaimableRunAtSql } from "./oldest-claimable";

/** One queue on the console's overview. */
export type QueueOverview = {
  queue_id: string;
  pool_id: string;
  paused: boolean;
  concurrency_cap: number | null;
  counts: Record<TJobState, number>;
  /** RUNNING jobs now (also in `counts`), against `concurrency_cap`. */
  running: number;
  /** Seconds the oldest claimable job (READY, or RETRY_WAIT whose time came) has waited; null when none. */
  oldest_ready_age_s: number | null;
  /** Jobs that finished in the last 5 minutes, any outcome. */
  finished_last_5m: number;
};

/**
 * Per queue: counts by state, running vs cap, age of the oldest claimable job, and recent
 * completions. The oldest claimable job per queue is a couple of index probes
 * (oldest-claimable.ts); recent completions use finished_jobs' finished_at index.
 */
export const queueOverview = async (db: Db): Promise<QueueOverview[]> => {
  const [queues, counts] = await Promise.all([
    db.query<{ id: string; pool_id: string; paused: boolean; concurrency_cap: number | null; oldest_s: number | null; recent: string }>(
      `SELECT q.id, q.pool_id, q.paused, q.concurrency_cap,
              extract(epoch FROM now() - ${oldestClaimableRunAtSql("q.id", "now()")})::float8 AS oldest_s,
              (SELECT count(*) FROM finished_jobs f WHERE f.queue_id = q.id AND f.finished_at > now() - interval '5 minutes')::text AS recent
         FROM queues q ORDER BY q.id`,
    ),
    db.query<{ queue_id: string; state: TJobState; n: string }>(
      `SELECT queue_id, state::text, count(*)::text AS n FROM jobs GROUP BY 1, 2
       UNION ALL
       SELECT queue_id, state::text, count(*)::text FROM finished_jobs GROUP BY 1, 2`,
    ),
  ]);
  const byQueue = new Map<string, Record<TJobState, number>>();
  for (const r of counts.rows) {
    const c = byQueue.get(r.queue_id) ?? (Object.fromEntries(JOB_STATES.map((s) => [s, 0])) as Record<TJobState, number>);
    c[r.state] += Number(r.n);
    byQueue.set(r.queue_id, c);
  }
  return queues.rows.map((q) => {
    const c = byQueue.get(q.id) ?? (Object.fromEntries(JOB_STATES.map((s) => [s, 0])) as Record<TJobState, number>);
    return {
      queue_id: q.id,
      pool_id: q.pool_id,
      paused: q.paused,
      concurrency_cap: q.concurrency_cap,
      counts: c,
      running: c.RUNNING,
      oldest_ready_age_s: q.oldest_s === null ? null : Math.max(0, Math.round(q.oldest_s * 10) / 10),
      finished_last_5m: Number(q.recent),
    };
  });
};

/** Jobs that finished in one minute, by outcome. */
export type ThroughputPoint = { minute: string; succeeded: number; dead: number; cancelled: number; expired: number };

/**
 * Completions per minute over the last `minutes` (default 15, at most 180), optionally for one
 * queue; minutes without completions are zeros, so a chart has no gaps. Reads finished_jobs by
 * its finished_at index.
 */
export const throughputByMinute = async (db: Db, params: { minutes?: number; queueId?: string } = {}): Promise<ThroughputPoint[]> => {
  const minutes = Math.min(Math.max(params.minutes ?? 15, 1), 180);
  const { rows } = await db.query<{ minute: Date; succeeded: string; dead: string; cancelled: string; expired: string }>(
    `WITH m AS (
       SELECT generate_series(date_trunc('minute', now()) - ($1::int - 1) * interval '1 minute', date_trunc('minute', now()), interval '1 minute') AS minute
     ), f AS (
       SELECT date_trunc('minute', finished_at) AS minute, state FROM finished_jobs
        WHERE finished_at >= date_trunc('minute', now()) - ($1::int - 1) * interval '1 minute'
          AND ($2::text IS NULL OR queue_id = $2)
     )
     SELECT m.minute,
            count(*) FILTER (WHERE f.state = 'SUCCEEDED')::text AS succeeded,
            count(*) FILTER (WHERE f.state = 'DEAD')::text AS dead,
            count(*) FILTER (WHERE f.state = 'CANCELLED')::text AS cancelled,
            count(*) FILTER (WHERE f.state = 'EXPIRED')::text AS expired
       FROM m LEFT JOIN f ON f.minute = m.minute
      GROUP BY m.minute ORDER BY m.minute`,
    [minutes, params.queueId ?? null],
  );
  return rows.map((r) => ({
    minute: r.minute.toISOString(),
    succeeded: Number(r.succeeded),
    dead: Number(r.dead),
    cancelled: Number(r.cancelled),
    expired: Number(r.expired),
  }));
};

/** A worker process as the pools page shows it. */
export type WorkerRow = {
  id: string;
  pool_id: string;
  host: string;
  pid: number;
  version: string;
  concurrency: number;
  running: number;
  draining: boolean;
  started_at: string;
  heartbeat_at: string;
  stopped_at: string | null;
  /** Seconds since its last heartbeat. */
  heartbeat_age_s: number;
  /** live: heartbeating; lost: {@link isWorkerLost} and never stopped; stopped: exited cleanly. */
  status: "live" | "lost" | "stopped";
};

/**
 * Workers of every pool (or one), live first. A worker is lost when it has not heartbeated for
 * `WORKER_LOST_AFTER_MS` (a few heartbeat intervals, {@link isWorkerLost}) without stopping, judged
 * against the database's clock, which stamps the heartbeats.
 */
export const listWorkers = async (db: Db, params: { poolId?: string; workerId?: string; includeStopped?: boolean } = {}): Promise<WorkerRow[]> => {
  const { rows } = await db.query<
    Omit<WorkerRow, "started_at" | "heartbeat_at" | "stopped_at" | "status" | "heartbeat_age_s"> & {
      started_at: Date;
      heartbeat_at: Date;
      stopped_at: Date | null;
      now: Date;
    }
  >(
    `SELECT id, pool_id, host, pid, version, concurrency, running, draining, started_at, heartbeat_at, stopped_at, now() AS now
       FROM workers
      WHERE ($1::text IS NULL OR pool_id = $1) AND ($2::boolean OR stopped_at IS NULL) AND ($3::text IS NULL OR id = $3)
      ORDER BY stopped_at IS NOT NULL, pool_id, started_at`,
    [params.poolId ?? null, params.includeStopped ?? false, params.workerId ?? null],
  );
  return rows.map(({ now, ...r }) => ({
    ...r,
    started_at: r.started_at.toISOString(),
    heartbeat_at: r.heartbeat_at.toISOString(),
    stopped_at: r.stopped_at?.toISOString() ?? null,
    heartbeat_age_s: Math.max(0, Math.round((now.getTime() - r.heartbeat_at.getTime()) / 100) / 10),
    status: r.stopped_at ? "stopped" : isWorkerLost(r.heartbeat_at, now) ? "lost" : "live",
  }));
};

/** What the audit page filters by. */
export type AuditFilter = { actor?: string; action?: string; objectType?: string; objectId?: string; from?: Date; to?: Date };
/** One audit row. */
export type AuditRow = {
  id: string;
  at: string;
  actor: string;
  action: string;
  object_type: string;
  object_id: string;
  before: unknown;
  after: unknown;
  reason: string | null;
};

/**
 * Audit rows matching `filter`, newest first, `limit` per page with an id cursor (ids only grow).
 * `action` matches a prefix (`queue.` for every queue action).
 */
export const listAudit = async (
  db: ControlDb,
  params: { filter: AuditFilter; cursor?: string | null; limit?: number },
): Promise<{ entries: AuditRow[]; next_cursor: string | null }> => {
  const limit = Math.min(Math.max(params.limit ?? 50, 1), 500);
  const f = params.filter;
  const cursor = params.cursor && /^\d{1,20}$/.test(params.cursor) ? BigInt(params.cursor) : null;
  const rows = await db.auditLog.findMany({
    where: {
      ...(cursor === null ? {} : { id: { lt: cursor } }),
      ...(f.actor === undefined ? {} : { actor: f.actor }),
      // startsWith becomes LIKE without escaping the pattern: escaped here so `queue_` matches that
      // prefix only, not `queueX…` (PostgreSQL's LIKE escape character is the backslash).
      ...(f.action === undefined ? {} : { action: { startsWith: f.action.replace(/[\\%_]/g, "\\$&") } }),
      ...(f.objectType === undefined ? {} : { objectType: f.objectType }),
      ...(f.objectId === undefined ? {} : { objectId: f.objectId }),
      ...(f.from || f.to ? { at: { ...(f.from ? { gte: f.from } : {}), ...(f.to ? { lt: f.to } : {}) } } : {}),
    },
    orderBy: { id: "desc" },
    take: limit + 1,
  });
  const page = rows.slice(0, limit).map((r) => ({
    id: r.id.toString(),
    at: r.at.toISOString(),
    actor: r.actor,
    action: r.action,
    object_type: r.objectType,
    object_id: r.objectId,
    before: r.before,
    after: r.after,
    reason: r.reason,
  }));
  return { entries: page, next_cursor: rows.length > limit ? page.at(-1)!.id : null };
};

/** One attempt of a job, for the job page's side-by-side view; the running attempt has no finish. */
export type AttemptView = {
  /** 1, 2, 3…: every run of the job in order, across redrives and hand-backs (distinct per row). */
  run: number;
  /** The attempt counter the run had (restarts at 1 after a redrive; a hand-back does not burn one). */
  attempt: number;
  /** Redrives that came before this run (0 for the job's first life). */
  redrive: number;
  worker_id: string | null;
  /** When the job became claimable for this run: enqueue (or `not_before`), the previous run's retry time, its end (a hand-back) or a redrive. */
  available_at: string;
  /** available_at → started_at, ms. */
  wait_ms: number;
  started_at: string;
  finished_at: string | null;
  /** started_at → finished_at, ms; null while running. */
  duration_ms: number | null;
  heartbeat_at: string | null;
  outcome: string;
  error: Record<string, unknown> | null;
  retry_at: string | null;
};

/**
 * A job's attempts in order: each finished one (worker, start, end, duration, outcome, error, the
 * retry it scheduled), then the running one, if any (outcome `running`, last heartbeat so far), or
 * the successful one (kept on the finished row, not in job_attempts). A redrive restarts the
 * attempt counter, so each row also carries its run number and how many redrives preceded it,
 * counted from the job's `redriven` events that happened before the run started.
 */
export const listAttempts = async (db: Db, jobId: string): Promise<AttemptView[]> => {
  const { rows } = await db.query<{
    attempt: number;
    redrive: number;
    worker_id: string | null;
    started_at: Date;
    finished_at: Date | null;
    heartbeat_at: Date | null;
    outcome: string;
    error: Record<string, unknown> | null;
    retry_at: Date | null;
  }>(
    `WITH runs AS (
       SELECT attempt, worker_id, started_at, finished_at, heartbeat_at, outcome::text AS outcome, error, retry_at, id AS ord
         FROM job_attempts WHERE job_id = $1
       UNION ALL
       SELECT attempt, lease_owner, claimed_at, NULL, heartbeat_at, 'running', NULL, NULL, 9223372036854775807
         FROM jobs WHERE job_id = $1 AND ${isRunningById("jobs")} AND claimed_at IS NOT NULL
       UNION ALL
       -- A successful attempt has no job_attempts row (lean ack): it is read from the finished row.
       SELECT f.attempt, f.last_worker, coalesce(f.claimed_at, f.finished_at), f.finished_at, NULL, 'succeeded', NULL, NULL, 9223372036854775807
         FROM finished_jobs f
        WHERE f.job_id = $1 AND f.state = 'SUCCEEDED'
          AND NOT EXISTS (SELECT 1 FROM job_attempts a WHERE a.job_id = f.job_id AND a.outcome = 'succeeded')
     )
     SELECT r.*, (SELECT count(*)::int FROM job_events e WHERE e.job_id = $1 AND e.kind = 'redriven' AND e.at <= r.started_at) AS redrive
       FROM runs r
      ORDER BY r.ord`,
    [jobId],
  );
  const [base, redrives] = await Promise.all([
    db.query<{ available_at: Date }>(
      `SELECT greatest(created_at, not_before) AS available_at FROM jobs WHERE job_id = $1
       UNION ALL SELECT greatest(created_at, not_before) FROM finished_jobs WHERE job_id = $1 LIMIT 1`,
      [jobId],
    ),
    db.query<{ at: Date }>(`SELECT at FROM job_events WHERE job_id = $1 AND kind = 'redriven' ORDER BY at`, [jobId]),
  ]);
  const enqueuedAt = base.rows[0]?.available_at ?? rows[0]?.started_at ?? new Date(0);
  // When each run became claimable: a redrive since the previous run ended, else that run's retry
  // time or (a hand-back, a rescue) its end, else the enqueue.
  const availableAt = (i: number): Date => {
    const r = rows[i]!;
    const prev = i > 0 ? rows[i - 1] : undefined;
    const from = prev?.finished_at?.getTime() ?? Number.NEGATIVE_INFINITY;
    const redrive = redrives.rows.findLast((e) => e.at.getTime() >= from && e.at.getTime() <= r.started_at.getTime());
    if (redrive) return redrive.at;
    if (!prev) return enqueuedAt;
    return prev.retry_at ?? prev.finished_at ?? enqueuedAt;
  };
  return rows.map((r, i) => ({
    run: i + 1,
    attempt: r.attempt,
    redrive: r.redrive,
    worker_id: r.worker_id,
    available_at: availableAt(i).toISOString(),
    wait_ms: Math.max(0, r.started_at.getTime() - availableAt(i).getTime()),
    started_at: r.started_at.toISOString(),
    finished_at: r.finished_at?.toISOString() ?? null,
    duration_ms: r.finished_at ? r.finished_at.getTime() - r.started_at.getTime() : null,
    heartbeat_at: r.heartbeat_at?.toISOString() ?? null,
    outcome: r.outcome,
    error: r.error,
    retry_at: r.retry_at?.toISOString() ?? null,
  }));
};
