import type { SafeFailure, TJobProgress, TJobState } from "@porter/contracts";
import type { Db } from "../db";
import { LIVE_STATES, TERMINAL_STATES } from "../state";
import { decodeCursor, encodeCursor } from "./jobs-query";
import { safeFailure } from "./safe-failure";

// What the tenant status page (/status/<tenant_id>) reads of a tenant's jobs (issue 13): the recent
// jobs and one job's detail, always scoped to one tenant and to the status link's job types, and
// projected to tenant-safe fields — no payload, result, queue, worker id, trace id, idempotency key,
// operator or note; failures through safeFailure. A job outside the scope is absent (null), the
// same answer as an unknown id, so a link cannot probe for other tenants' jobs.

/** One job as the tenant's status page lists it. */
export type TenantJobSummary = {
  job_id: string;
  job_type: string;
  state: TJobState;
  attempt: number;
  max_attempts: number;
  created_at: string;
  /** When the current (live) or last (finished) attempt was claimed. */
  started_at: string | null;
  /** RETRY_WAIT: when the next attempt may start. */
  next_attempt_at: string | null;
  finished_at: string | null;
  cancel_requested: boolean;
  /** The current or last attempt's progress (RUNNING jobs report it; kept on the finished row). */
  progress: TJobProgress | null;
  /** The tenant-safe failure of the last failed attempt (RETRY_WAIT) or of the job (DEAD, EXPIRED, CANCELLED). */
  failure: SafeFailure | null;
};

export type TenantJobPage = { jobs: TenantJobSummary[]; next_cursor: string | null };

/** Which jobs: the tenant, the link's job types ([] = all), and the page's own filters. */
export type TenantJobScope = { tenantId: string; jobTypes: readonly string[] };

type Row = {
  job_id: string;
  job_type: string;
  state: TJobState;
  attempt: number;
  max_attempts: number;
  created_at: Date;
  claimed_at: Date | null;
  run_at: Date | null;
  finished_at: Date | null;
  cancel_requested: boolean;
  progress: TJobProgress | null;
  error: unknown;
};

const LIVE = `job_id, job_type, state::text, attempt, max_attempts, created_at, claimed_at,
  CASE WHEN state = 'RETRY_WAIT' THEN run_at END AS run_at, NULL::timestamptz AS finished_at,
  cancel_requested_at IS NOT NULL AS cancel_requested, progress, CASE WHEN state = 'RETRY_WAIT' THEN last_error END AS error`;
const FINISHED = `job_id, job_type, state::text, attempt, max_attempts, created_at, claimed_at, NULL::timestamptz AS run_at,
  finished_at, cancel_requested_at IS NOT NULL AS cancel_requested, progress, CASE WHEN state <> 'SUCCEEDED' THEN error END AS error`;

const summary = (r: Row): TenantJobSummary => ({
  job_id: r.job_id,
  job_type: r.job_type,
  state: r.state,
  attempt: r.attempt,
  max_attempts: r.max_attempts,
  created_at: r.created_at.toISOString(),
  started_at: r.claimed_at?.toISOString() ?? null,
  next_attempt_at: r.run_at?.toISOString() ?? null,
  finished_at: r.finished_at?.toISOString() ?? null,
  cancel_requested: r.cancel_requested,
  progress: r.progress ?? null,
  failure: r.error ? safeFailure(r.error) : null,
});

/**
 * A page of the tenant's jobs, newest first (job_id descending: UUIDv7, creation order), from both
 * tables, limited to the link's job types and optionally to one state and one job type (a type
 * outside the link's scope gives an empty page). Same shape as the console's listJobs: each table
 * read backwards along its job_id index under the cursor with its own LIMIT, then merged. Neither
 * table has a (tenant_id, job_id) index: the tenant filter is applied on that job_id-ordered
 * scan (see docs/tenant-status.md, "Reads", for the EXPLAIN and why no index was added).
 */
export const tenantRecentJobs = async (
  db: Db,
  params: TenantJobScope & { state?: TJobState | null; jobType?: string | null; cursor?: string | null; limit?: number },
): Promise<TenantJobPage> => {
  const limit = Math.min(Math.max(params.limit ?? 25, 1), 100);
  if (params.jobType && params.jobTypes.length && !params.jobTypes.includes(params.jobType)) return { jobs: [], next_cursor: null };
  const types = params.jobType ? [params.jobType] : params.jobTypes.length ? [...params.jobTypes] : null;
  const after = params.cursor ? decodeCursor(params.cursor) : null;
  const args: unknown[] = [params.tenantId, types, after, params.state ?? null];
  const where = `tenant_id = $1 AND ($2::text[] IS NULL OR job_type = ANY($2)) AND ($3::uuid IS NULL OR job_id < $3::uuid)
    AND ($4::job_state IS NULL OR state = $4::job_state)`;
  const parts: string[] = [];
  const wantsLive = !params.state || (LIVE_STATES as readonly string[]).includes(params.state);
  const wantsFinished = !params.state || (TERMINAL_STATES as readonly string[]).includes(params.state);
  if (wantsLive) parts.push(`(SELECT ${LIVE} FROM jobs WHERE ${where} ORDER BY job_id DESC LIMIT ${limit + 1})`);
  if (wantsFinished) parts.push(`(SELECT ${FINISHED} FROM finished_jobs WHERE ${where} ORDER BY job_id DESC LIMIT ${limit + 1})`);
  const { rows } = await db.query<Row>(`SELECT * FROM (${parts.join(" UNION ALL ")}) u ORDER BY job_id DESC LIMIT ${limit + 1}`, args);
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  return { jobs: page.map(summary), next_cursor: rows.length > limit && last ? encodeCursor(last.job_id) : null };
};

/** One entry of a job's tenant-safe timeline. */
export type TenantTimelineEvent = {
  at: string;
  kind: "created" | "started" | "succeeded" | "failed" | "timed_out" | "interrupted" | "returned" | "retry_wait" | "requeued" | "cancel_requested" | TJobState;
  attempt: number | null;
  failure: SafeFailure | null;
  /** retry_wait: when the next attempt may start. */
  until: string | null;
};

export type TenantJobDetail = TenantJobSummary & { timeline: TenantTimelineEvent[] };

const OUTCOME: Record<string, TenantTimelineEvent["kind"]> = {
  succeeded: "succeeded",
  failed: "failed",
  timed_out: "timed_out",
  lease_expired: "interrupted",
  cancelled: "CANCELLED",
  handed_back: "returned",
  not_started: "returned",
};

/**
 * One job of the tenant, within the link's job types, with a tenant-safe timeline: created; each
 * attempt's start and outcome (with its safe failure) and the retry wait it scheduled; a requeue
 * by an operator (without who or why); the terminal state. null when the job is unknown, another
 * tenant's, or of a type outside the scope. Not shown: payload and result (the producer's and
 * handler's data — the page may be shown to people the producer never meant to see them), worker
 * ids, hosts, actors, notes, the raw error.
 */
export const tenantJob = async (db: Db, params: TenantJobScope & { jobId: string }): Promise<TenantJobDetail | null> => {
  if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(params.jobId)) return null;
  const types = params.jobTypes.length ? [...params.jobTypes] : null;
  const where = `job_id = $1::uuid AND tenant_id = $2 AND ($3::text[] IS NULL OR job_type = ANY($3))`;
  const { rows } = await db.query<Row>(`SELECT ${LIVE} FROM jobs WHERE ${where} UNION ALL SELECT ${FINISHED} FROM finished_jobs WHERE ${where}`, [
    params.jobId,
    params.tenantId,
    types,
  ]);
  const row = rows[0];
  if (!row) return null;
  const [attempts, events] = await Promise.all([
    db.query<{ attempt: number; started_at: Date; finished_at: Date; outcome: string; error: unknown; retry_at: Date | null }>(
      `SELECT attempt, started_at, finished_at, outcome::text, error, retry_at FROM job_attempts WHERE job_id = $1 ORDER BY id`,
      [params.jobId],
    ),
    db.query<{ at: Date; kind: string; attempt: number | null }>(
      `SELECT at, kind, attempt FROM job_events WHERE job_id = $1 AND kind IN ('redriven', 'cancel_requested') ORDER BY id`,
      [params.jobId],
    ),
  ]);
  const out: Array<TenantTimelineEvent & { order: number }> = [];
  const push = (at: Date, kind: TenantTimelineEvent["kind"], attempt: number | null, failure: SafeFailure | null = null, until: Date | null = null) =>
    out.push({ at: at.toISOString(), kind, attempt, failure, until: until?.toISOString() ?? null, order: out.length });
  push(row.created_at, "created", null);
  for (const a of attempts.rows) {
    push(a.started_at, "started", a.attempt);
    push(a.finished_at, OUTCOME[a.outcome] ?? "failed", a.attempt, a.error ? safeFailure(a.error) : null);
    if (a.retry_at) push(a.finished_at, "retry_wait", a.attempt, null, a.retry_at);
  }
  for (const e of events.rows) push(e.at, e.kind === "redriven" ? "requeued" : "cancel_requested", e.attempt);
  if (row.state === "RUNNING" && row.claimed_at) push(row.claimed_at, "started", row.attempt);
  if (row.state === "SUCCEEDED" && row.finished_at) {
    push(row.claimed_at ?? row.finished_at, "started", row.attempt);
    push(row.finished_at, "SUCCEEDED", row.attempt);
  } else if (row.finished_at) {
    // DEAD after a failed attempt already shows that attempt's failure; the terminal entry repeats
    // the job's own (tenant-safe) failure only when no attempt carried one (expired, cancelled).
    const last = out.findLast((e) => e.failure);
    const failure = row.error ? safeFailure(row.error) : null;
    push(row.finished_at, row.state, row.attempt, last && failure && last.failure?.message === failure.message ? null : failure);
  }
  const timeline = out
    .sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : a.order - b.order))
    .map(({ order: _order, ...e }) => e)
    // An attempt cancelled by request already ends in CANCELLED below; don't say it twice.
    .filter((e, i, all) => !(e.kind === "CANCELLED" && all.slice(i + 1).some((n) => n.kind === "CANCELLED")));
  return { ...summary(row), timeline };
};
