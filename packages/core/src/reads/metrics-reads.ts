// The reads behind the console's Prometheus endpoint (/api/metrics): each one statement whose cost
// is bounded by something small — queues, tenants per queue, failure groups, live workers — or,
// for the live job counts, by the hot table (live jobs only) under a statement timeout. None
// counts finished jobs: those come from the rollups.
import { inOwnTransaction } from "@porter/db/pool";
import type { Db } from "../db";
import { WORKER_LOST_AFTER_MS } from "../policy/worker-liveness";
import { oldestClaimableRunAtSql } from "./oldest-claimable";

/**
 * Runs one scrape read in a transaction of its own with `statement_timeout` (a scrape never waits
 * long on the database) and JIT off: these are many tiny index probes whose summed cost estimate
 * crosses `jit_above_cost`, and compiling them cost ~20 ms and 80–120 ms of execution against ~2 ms
 * without JIT (1M-job backlog, 10 queues × 50 tenants, docs/observability.md).
 */
const scrapeRead = <T>(db: Db, timeoutMs: number, sql: string, params: unknown[] = []): Promise<T[]> =>
  inOwnTransaction(db, async (tx) => {
    await tx.query(`SELECT set_config('statement_timeout', $1, true), set_config('jit', 'off', true)`, [String(Math.max(1, Math.round(timeoutMs)))]);
    return (await tx.query(sql, params)).rows as T[];
  });

/** statement_timeout of the reads other than the live counts, in milliseconds. */
const PROBE_TIMEOUT_MS = 2_000;

/** Live jobs of one (queue, tenant, state). */
export type LiveJobCount = { queue_id: string; tenant_id: string; state: string; count: number };

/**
 * Live jobs (READY, RUNNING, RETRY_WAIT) per (queue, tenant, state): one GROUP BY over the hot
 * table, which holds live jobs only, so its cost is the backlog plus the running jobs — O(live
 * jobs), never the finished ones. Run under `SET LOCAL statement_timeout` (`timeoutMs`) so a scrape
 * during a huge backlog fails fast instead of piling up; callers cache the result.
 */
export const liveJobCounts = async (db: Db, options: { timeoutMs: number }): Promise<LiveJobCount[]> => {
  const rows = await scrapeRead<{ queue_id: string; tenant_id: string; state: string; n: string }>(
    db,
    options.timeoutMs,
    `SELECT queue_id, tenant_id, state::text AS state, count(*)::text AS n FROM jobs GROUP BY 1, 2, 3`,
  );
  return rows.map((r) => ({ queue_id: r.queue_id, tenant_id: r.tenant_id, state: r.state, count: Number(r.n) }));
};

/** Per queue, the age in seconds of its oldest claimable job (null: none). */
export type OldestReady = { queue_id: string; oldest_s: number | null };

/**
 * Per queue, seconds since the oldest claimable job (READY, or RETRY_WAIT whose `run_at` came)
 * became claimable, by index probes only (oldest-claimable.ts, the one home of the rule the
 * console's overview and the signals use too). The plan is pinned in metrics-reads.int.test.ts
 * (EXPLAIN: index scans, no Seq Scan on jobs).
 */
export const OLDEST_READY_SQL = `SELECT q.id AS queue_id,
         extract(epoch FROM now() - ${oldestClaimableRunAtSql("q.id", "now()")})::float8 AS oldest_s
    FROM queues q
   ORDER BY q.id`;

/** See {@link OLDEST_READY_SQL}. */
export const oldestReady = async (db: Db): Promise<OldestReady[]> => {
  const rows = await scrapeRead<{ queue_id: string; oldest_s: number | null }>(db, PROBE_TIMEOUT_MS, OLDEST_READY_SQL);
  return rows.map((r) => ({ queue_id: r.queue_id, oldest_s: r.oldest_s === null ? null : Math.max(0, r.oldest_s) }));
};

/** Per queue: jobs DEAD now, and the age of the oldest dead job in a group nobody owns. */
export type DeadByQueue = { queue_id: string; dead: number; unowned_oldest_s: number | null };

/**
 * Per queue, from the failure groups (O(groups), not O(dead jobs)): `dead` sums `dlq_groups.dead_now`
 * of the groups of the queue's job types (a group's job type belongs to one queue, `job_types`);
 * `unowned_oldest_s` is, over the queue's groups with no owner that still hold dead jobs and are not
 * resolved or ignored (the DLQ's `unowned_age` alert condition), the age of the oldest job still
 * DEAD — one probe of `finished_jobs_dlq_fingerprint_idx` (dlq_fingerprint, finished_at) per group.
 */
export const deadByQueue = async (db: Db): Promise<DeadByQueue[]> => {
  const rows = await scrapeRead<{ queue_id: string; dead: string; unowned_oldest_s: number | null }>(
    db,
    PROBE_TIMEOUT_MS,
    `SELECT q.id AS queue_id, coalesce(d.dead, 0)::text AS dead, u.oldest_s AS unowned_oldest_s
       FROM queues q
       LEFT JOIN LATERAL (
         SELECT sum(g.dead_now) AS dead FROM job_types jt JOIN dlq_groups g ON g.job_type = jt.id
          WHERE jt.queue_id = q.id AND g.dead_now > 0
       ) d ON true
       LEFT JOIN LATERAL (
         SELECT extract(epoch FROM now() - min(o.oldest))::float8 AS oldest_s
           FROM job_types jt
           JOIN dlq_groups g ON g.job_type = jt.id AND g.owner_id IS NULL AND g.dead_now > 0 AND g.status NOT IN ('resolved', 'ignored')
           CROSS JOIN LATERAL (
             SELECT fj.finished_at AS oldest FROM finished_jobs fj
              WHERE fj.dlq_fingerprint = g.fingerprint AND fj.state = 'DEAD'
              ORDER BY fj.finished_at LIMIT 1
           ) o
          WHERE jt.queue_id = q.id
       ) u ON true
      ORDER BY q.id`,
  );
  return rows.map((r) => ({
    queue_id: r.queue_id,
    dead: Number(r.dead),
    unowned_oldest_s: r.unowned_oldest_s === null ? null : Math.max(0, r.unowned_oldest_s),
  }));
};

/** Workers of a pool in one state: live (heartbeating), draining, or lost (no heartbeat, no clean stop). */
export type WorkerStateCount = { pool_id: string; state: "live" | "draining" | "lost"; count: number };

/**
 * Workers not cleanly stopped, per pool and state, by the liveness rule of worker-liveness.ts
 * (lost: no heartbeat for `WORKER_LOST_AFTER_MS`, the database's clock). Every pool appears with
 * every state (zeros included), so a pool whose workers all vanished reads 0 live, not nothing.
 */
export const workersByState = async (db: Db): Promise<WorkerStateCount[]> => {
  const rows = await scrapeRead<{ pool_id: string; state: WorkerStateCount["state"]; n: number }>(
    db,
    PROBE_TIMEOUT_MS,
    `SELECT p.id AS pool_id, s.state, count(w.id)::int AS n
       FROM pools p
       CROSS JOIN (VALUES ('live'), ('draining'), ('lost')) s(state)
       LEFT JOIN workers w ON w.pool_id = p.id AND w.stopped_at IS NULL
        AND s.state = CASE WHEN w.heartbeat_at < now() - make_interval(secs => $1::float8 / 1000) THEN 'lost'
                           WHEN w.draining THEN 'draining' ELSE 'live' END
      GROUP BY p.id, s.state ORDER BY 1, 2`,
    [WORKER_LOST_AFTER_MS],
  );
  return rows.map((r) => ({ pool_id: r.pool_id, state: r.state, count: r.n }));
};
