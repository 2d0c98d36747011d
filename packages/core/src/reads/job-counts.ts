// Counts of jobs over the data plane's tables (GROUP BY over jobs and finished_jobs): plain SQL on
// pg, like the other reads of jobs.
import type { Db } from "../db";

/** RUNNING jobs per queue (for drain progress and the console). */
export const runningCounts = async (db: Db, queueIds?: string[]): Promise<Map<string, number>> => {
  const { rows } = await db.query<{ queue_id: string; n: string }>(
    `SELECT queue_id, count(*)::text AS n FROM jobs WHERE state = 'RUNNING' AND ($1::text[] IS NULL OR queue_id = ANY($1))
      GROUP BY queue_id`,
    [queueIds ?? null],
  );
  return new Map(rows.map((r) => [r.queue_id, Number(r.n)]));
};

/** Counts of jobs by queue and state, live and finished. */
export const countsByState = async (db: Db): Promise<Array<{ queue_id: string; state: string; count: number }>> => {
  const { rows } = await db.query<{ queue_id: string; state: string; n: string }>(
    `SELECT queue_id, state::text, count(*)::text AS n FROM jobs GROUP BY 1, 2
     UNION ALL
     SELECT queue_id, state::text, count(*)::text FROM finished_jobs GROUP BY 1, 2`,
  );
  return rows.map((r) => ({ queue_id: r.queue_id, state: r.state, count: Number(r.n) }));
};

/**
 * One tenant's jobs by state, live and finished, limited to `jobTypes` ([] = every type): the
 * counts of the tenant status page (/status/<tenant_id>). Two GROUP BYs over the tenant's rows
 * (finished_jobs has a (tenant_id, finished_at) index); states with no job are absent.
 */
export const tenantCountsByState = async (db: Db, tenantId: string, jobTypes: readonly string[]): Promise<Record<string, number>> => {
  const types = jobTypes.length ? [...jobTypes] : null;
  const { rows } = await db.query<{ state: string; n: string }>(
    `SELECT state, sum(n)::text AS n FROM (
       SELECT state::text, count(*) AS n FROM jobs WHERE tenant_id = $1 AND ($2::text[] IS NULL OR job_type = ANY($2)) GROUP BY 1
       UNION ALL
       SELECT state::text, count(*) FROM finished_jobs WHERE tenant_id = $1 AND ($2::text[] IS NULL OR job_type = ANY($2)) GROUP BY 1
     ) c GROUP BY state ORDER BY state`,
    [tenantId, types],
  );
  return Object.fromEntries(rows.map((r) => [r.state, Number(r.n)]));
};
