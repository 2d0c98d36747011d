// Test fixtures of the worker: the diag control plane (from core's control-plane factory), enqueue
// shortcuts, state probes and a polling `waitFor`. Used by integration tests only.
import { randomUUID } from "node:crypto";
import { DIAG_JOB_TYPES, type TJobError } from "@porter/contracts";
import { enqueueJobs } from "@porter/core";
import { controlPlane, type QueueRow } from "@porter/core/testing/control-plane-factory";
import type pg from "pg";

export type Db = pg.Pool | pg.PoolClient | pg.Client;

/**
 * A pool `pool` with one queue `diag` (columns from `queue`, the rest the database's defaults)
 * serving every diag.* job type, and tenant_A.
 */
export const createDiagPlane = async (db: Db, options: { pool?: string; queue?: Omit<QueueRow, "id" | "pool_id">; workerConcurrency?: number } = {}) =>
  controlPlane(db, {
    pool: { id: options.pool ?? "diag-pool", worker_concurrency: options.workerConcurrency },
    queues: [{ id: "diag", ...options.queue }],
    jobTypes: DIAG_JOB_TYPES.map((id) => ({ id, queue: "diag" })),
    tenants: ["tenant_A"],
  });

export type EnqueueSpec = {
  type: string;
  payload: Record<string, unknown>;
  tenant?: string;
  maxAttempts?: number;
  timeoutS?: number;
  priority?: number;
};

/** Enqueues jobs through core (one transaction, NOTIFY) and returns their job ids in order. */
export const enqueue = async (db: Db, jobs: EnqueueSpec[]): Promise<string[]> => {
  const results = await enqueueJobs(
    db,
    jobs.map((j) => ({
      job_type: j.type,
      tenant_id: j.tenant ?? "tenant_A",
      payload: j.payload,
      idempotency_key: randomUUID(),
      max_attempts: j.maxAttempts,
      timeout_s: j.timeoutS,
      priority: j.priority,
    })),
  );
  return results.map((r) => r.job_id);
};

export type JobRow = {
  state: string;
  attempt: number;
  result: unknown;
  error: TJobError | null;
  lease_token: string | null;
  partial: boolean | null;
};

/** A job wherever it lives (live or finished), or null. */
export const jobRow = async (db: Db, jobId: string): Promise<JobRow | null> => {
  const { rows } = await db.query<JobRow>(
    `SELECT state::text, attempt, NULL::jsonb AS result, last_error AS error, lease_token::text, NULL::boolean AS partial
       FROM jobs WHERE job_id = $1
     UNION ALL
     SELECT state::text, attempt, result, error, NULL, partial FROM finished_jobs WHERE job_id = $1`,
    [jobId],
  );
  return rows[0] ?? null;
};

/** States of many jobs, by job id. */
export const statesOf = async (db: Db, jobIds: string[]): Promise<Map<string, string>> => {
  const { rows } = await db.query<{ job_id: string; state: string }>(
    `SELECT job_id::text, state::text FROM jobs WHERE job_id = ANY($1::uuid[])
     UNION ALL SELECT job_id::text, state::text FROM finished_jobs WHERE job_id = ANY($1::uuid[])`,
    [jobIds],
  );
  return new Map(rows.map((r) => [r.job_id, r.state]));
};

/** The recorded attempts of a job, in order. */
/**
 * A job's attempts in order. The successful attempt has no `job_attempts` row (core reads it from
 * the finished row), so it is appended from there, as the timeline does.
 */
export const attemptsOf = async (db: Db, jobId: string) => {
  const { rows } = await db.query<{ attempt: number; outcome: string; error: TJobError | null; worker_id: string | null }>(
    `SELECT * FROM (
       SELECT attempt, outcome::text, error, worker_id, id AS ord FROM job_attempts WHERE job_id = $1
       UNION ALL
       SELECT attempt, 'succeeded', NULL, last_worker, 9223372036854775807 FROM finished_jobs WHERE job_id = $1 AND state = 'SUCCEEDED'
     ) a ORDER BY ord`,
    [jobId],
  );
  return rows.map(({ attempt, outcome, error, worker_id }) => ({ attempt, outcome, error, worker_id }));
};

/** Polls `probe` until it returns a value other than undefined/false, or fails after `timeoutMs`. */
export const waitFor = async <T>(
  what: string,
  probe: () => Promise<T | undefined | false> | T | undefined | false,
  options: { timeoutMs?: number; intervalMs?: number } = {},
): Promise<T> => {
  const deadline = Date.now() + (options.timeoutMs ?? 15_000);
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined && value !== false) return value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${what}${last ? ` (last error: ${(last as Error).message})` : ""}`);
    }
    await new Promise((resolve) => setTimeout(resolve, options.intervalMs ?? 50));
  }
};

/** Waits until every job is in one of `states`; returns the final states. */
export const waitForStates = async (db: Db, jobIds: string[], states: string[], timeoutMs = 20_000): Promise<Map<string, string>> =>
  waitFor(
    `${jobIds.length} job(s) to reach ${states.join("/")}`,
    async () => {
      const current = await statesOf(db, jobIds);
      return jobIds.every((id) => states.includes(current.get(id) ?? "")) ? current : undefined;
    },
    { timeoutMs },
  );

/**
 * Wraps `query` of every connection `pool` opens (the claim runs on a connection the claim loop
 * keeps checked out, not through `pool.query`): `wrap` gets the original and the call's arguments.
 */
export const onEachQuery = (pool: pg.Pool, wrap: (query: (...args: unknown[]) => unknown, args: unknown[]) => unknown): void => {
  pool.on("connect", (client) => {
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    client.query = ((...args: unknown[]) => wrap(query, args)) as typeof client.query;
  });
};

/** The call is the claim statement. */
export const isClaim = (args: unknown[]): boolean => {
  const text = typeof args[0] === "string" ? args[0] : (args[0] as { text?: string } | undefined)?.text;
  return text?.includes("porter_claim(") ?? false;
};
