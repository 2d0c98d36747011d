import { AppError, JOB_STATES, type TJobState } from "@porter/contracts";
import type { Db } from "../db";
import { LIVE_STATES, TERMINAL_STATES } from "../state";

/** What the jobs browser filters by; every field narrows (AND). Absent = any. */
export type JobFilter = {
  states?: TJobState[];
  queueId?: string;
  jobType?: string;
  tenantId?: string;
  /** created_at ≥ from (inclusive) */
  from?: Date;
  /** created_at < to (exclusive) */
  to?: Date;
  idempotencyKey?: string;
  jobId?: string;
  traceId?: string;
  /** The code of the job's error: a finished job's `error`, a live job's `last_error` (of its last failed attempt). */
  errorCode?: string;
};

/** One row of the jobs browser: the envelope's identity, where it is, and its last error. */
export type JobListRow = {
  job_id: string;
  job_type: string;
  queue_id: string;
  tenant_id: string;
  state: TJobState;
  priority: number;
  attempt: number;
  max_attempts: number;
  idempotency_key: string;
  trace_id: string;
  created_at: string;
  run_at: string | null;
  finished_at: string | null;
  cancel_requested: boolean;
  error_code: string | null;
  error_message: string | null;
};

/** A page of the jobs browser; `next_cursor` is null on the last page. */
export type JobPage = { jobs: JobListRow[]; next_cursor: string | null };

/**
 * WHERE clause of a filter on `jobs` or `finished_jobs` (same column names), appending its
 * parameters to `params`. Every column is compared by equality or range, so each filter can use
 * an index where one exists (job_id unique in both tables, finished_jobs (queue_id, state, …),
 * (tenant_id, …)); the idempotency key goes through idempotency_keys' primary key. The time range
 * (created_at) has no index of its own: it filters the job_id-ordered scan.
 */
const whereOf = (filter: JobFilter, params: unknown[], states: readonly TJobState[]): string => {
  const add = (value: unknown) => {
    params.push(value);
    return `$${params.length}`;
  };
  const conds: string[] = [];
  const wanted = filter.states?.length ? states.filter((s) => filter.states!.includes(s)) : [...states];
  if (wanted.length < states.length) conds.push(`state = ANY(${add(wanted)}::job_state[])`);
  if (filter.queueId) conds.push(`queue_id = ${add(filter.queueId)}`);
  if (filter.jobType) conds.push(`job_type = ${add(filter.jobType)}`);
  if (filter.tenantId) conds.push(`tenant_id = ${add(filter.tenantId)}`);
  if (filter.from) conds.push(`created_at >= ${add(filter.from)}`);
  if (filter.to) conds.push(`created_at < ${add(filter.to)}`);
  if (filter.jobId) conds.push(`job_id = ${add(filter.jobId)}::uuid`);
  if (filter.traceId) conds.push(`trace_id = ${add(filter.traceId)}`);
  // The two tables name the error column differently; like the time range, it filters the
  // job_id-ordered scan (the codes offered come from dlq_groups, see dlqErrorCodes).
  if (filter.errorCode) conds.push(`${states === LIVE_STATES ? "last_error" : "error"} ->> 'code' = ${add(filter.errorCode)}`);
  if (filter.idempotencyKey) {
    const key = add(filter.idempotencyKey);
    conds.push(
      filter.tenantId
        ? `job_id IN (SELECT job_id FROM idempotency_keys WHERE tenant_id = ${add(filter.tenantId)} AND idempotency_key = ${key})`
        : `idempotency_key = ${key}`,
    );
  }
  return conds.length ? conds.join(" AND ") : "true";
};

/** Which of the two tables a filter needs: live states live in `jobs`, terminal ones in `finished_jobs`. */
const tablesFor = (filter: JobFilter) => {
  const states = filter.states?.length ? filter.states : JOB_STATES;
  return {
    isLive: states.some((s) => (LIVE_STATES as readonly string[]).includes(s)),
    isFinished: states.some((s) => (TERMINAL_STATES as readonly string[]).includes(s)),
  };
};

/** A cursor is the last row's job id, its 16 bytes in base64url: opaque, and never changed by what happens to the job. */
export const encodeCursor = (jobId: string) => Buffer.from(jobId.replace(/-/g, ""), "hex").toString("base64url");
export const decodeCursor = (cursor: string): string => {
  const bytes = Buffer.from(cursor, "base64url");
  // Canonical form only: 16 bytes that encode back to the same text (base64url ignores stray characters).
  if (bytes.length !== 16 || bytes.toString("base64url") !== cursor) throw new AppError("BAD_REQUEST", { message: "invalid cursor" });
  const hex = bytes.toString("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
};

// job_id stays a uuid (pg returns it as text): ORDER BY job_id then sorts uuids, along the index.
const LIVE_COLUMNS = `job_id, job_type, queue_id, tenant_id, state::text, priority, attempt, max_attempts, idempotency_key,
  trace_id, created_at, run_at, NULL::timestamptz AS finished_at, cancel_requested_at IS NOT NULL AS cancel_requested,
  last_error ->> 'code' AS error_code, last_error ->> 'message' AS error_message`;
const FINISHED_COLUMNS = `job_id, job_type, queue_id, tenant_id, state::text, priority, attempt, max_attempts, idempotency_key,
  trace_id, created_at, NULL::timestamptz AS run_at, finished_at, cancel_requested_at IS NOT NULL AS cancel_requested,
  error ->> 'code' AS error_code, error ->> 'message' AS error_message`;

type ListDbRow = Omit<JobListRow, "created_at" | "run_at" | "finished_at"> & {
  created_at: Date;
  run_at: Date | null;
  finished_at: Date | null;
};

/**
 * A page of jobs matching `filter`, newest first, from both tables (live and finished). Newest
 * first is job_id descending: job ids are UUIDv7, whose leading 48 bits are the enqueue's clock
 * in milliseconds (the created_at of the row), so their order is creation order and, unlike
 * created_at, has no ties. Each table is read backwards along its job_id index (jobs_job_id_key,
 * finished_jobs' primary key) under the cursor with its own LIMIT, then the two short lists are
 * merged — so a page costs two bounded index-ordered reads, whatever the depth. A job lives in
 * one table at a time, so the merge sees each id once.
 */
export const listJobs = async (db: Db, params: { filter: JobFilter; cursor?: string | null; limit?: number }): Promise<JobPage> => {
  const limit = Math.min(Math.max(params.limit ?? 50, 1), 500);
  const { isLive, isFinished } = tablesFor(params.filter);
  const args: unknown[] = [];
  const after = params.cursor ? decodeCursor(params.cursor) : null;
  let cursorCond = "true";
  if (after) {
    args.push(after);
    cursorCond = `job_id < $1::uuid`;
  }
  const parts: string[] = [];
  if (isLive) {
    const where = whereOf(params.filter, args, LIVE_STATES);
    parts.push(`(SELECT ${LIVE_COLUMNS} FROM jobs WHERE ${where} AND ${cursorCond} ORDER BY job_id DESC LIMIT ${limit + 1})`);
  }
  if (isFinished) {
    const where = whereOf(params.filter, args, TERMINAL_STATES);
    parts.push(`(SELECT ${FINISHED_COLUMNS} FROM finished_jobs WHERE ${where} AND ${cursorCond} ORDER BY job_id DESC LIMIT ${limit + 1})`);
  }
  if (parts.length === 0) return { jobs: [], next_cursor: null };
  const { rows } = await db.query<ListDbRow>(`SELECT * FROM (${parts.join(" UNION ALL ")}) u ORDER BY job_id DESC LIMIT ${limit + 1}`, args);
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  return {
    jobs: page.map((r) => ({
      ...r,
      created_at: r.created_at.toISOString(),
      run_at: r.run_at?.toISOString() ?? null,
      finished_at: r.finished_at?.toISOString() ?? null,
    })),
    next_cursor: rows.length > limit && last ? encodeCursor(last.job_id) : null,
  };
};

/**
 * Jobs matching `filter` by state — the browser's sidebar — ignoring the filter's own state
 * list so every state shows its count. Zero counts are included.
 */
export const countJobsByState = async (db: Db, filter: JobFilter): Promise<Record<TJobState, number>> => {
  const unstated = { ...filter, states: undefined };
  const args: unknown[] = [];
  const live = whereOf(unstated, args, LIVE_STATES);
  const finished = whereOf(unstated, args, TERMINAL_STATES);
  const { rows } = await db.query<{ state: TJobState; n: string }>(
    `SELECT state::text, count(*)::text AS n FROM jobs WHERE ${live} GROUP BY state
     UNION ALL
     SELECT state::text, count(*)::text FROM finished_jobs WHERE ${finished} GROUP BY state`,
    args,
  );
  const counts = Object.fromEntries(JOB_STATES.map((s) => [s, 0])) as Record<TJobState, number>;
  for (const r of rows) counts[r.state] += Number(r.n);
  return counts;
};

/**
 * Ids of jobs matching `filter` that are in one of `states` (the states a bulk action applies
 * to), oldest first (job_id order: the browser's, reversed), at most `limit`; `total` counts
 * every match so a caller can say "first 10,000 of 12,345".
 */
export const selectJobIds = async (
  db: Db,
  params: { filter: JobFilter; states: readonly TJobState[]; limit: number },
): Promise<{ jobIds: string[]; total: number }> => {
  const states = params.states.filter((s) => !params.filter.states?.length || params.filter.states.includes(s));
  if (states.length === 0) return { jobIds: [], total: 0 };
  const filter = { ...params.filter, states };
  const { isLive, isFinished } = tablesFor(filter);
  const args: unknown[] = [];
  const parts: string[] = [];
  if (isLive) parts.push(`SELECT job_id FROM jobs WHERE ${whereOf(filter, args, LIVE_STATES)}`);
  if (isFinished) parts.push(`SELECT job_id FROM finished_jobs WHERE ${whereOf(filter, args, TERMINAL_STATES)}`);
  args.push(params.limit);
  const { rows } = await db.query<{ job_id: string; total: string }>(
    // m.job_id: the uuid (a bare job_id would name the text output column, whose collation is not uuid order).
    `SELECT job_id::text, count(*) OVER ()::text AS total FROM (${parts.join(" UNION ALL ")}) m ORDER BY m.job_id LIMIT $${args.length}`,
    args,
  );
  return { jobIds: rows.map((r) => r.job_id), total: Number(rows[0]?.total ?? 0) };
};

/** States of the given jobs, wherever they are; unknown ids are absent from the map. */
export const jobStates = async (db: Db, jobIds: string[]): Promise<Map<string, TJobState>> => {
  const { rows } = await db.query<{ job_id: string; state: TJobState }>(
    `SELECT job_id::text, state::text FROM jobs WHERE job_id = ANY($1::uuid[])
     UNION ALL SELECT job_id::text, state::text FROM finished_jobs WHERE job_id = ANY($1::uuid[])`,
    [jobIds],
  );
  return new Map(rows.map((r) => [r.job_id, r.state]));
};
