import { AppError, type TJobState } from "@porter/contracts";
import { writeAudit } from "../control-plane/audit";
import { type Db, inTransaction } from "../db";
import { isRunningById } from "./fence";
import { insertFinished } from "./finish";
import { flowUpsertSql } from "./flow-write";

/** Channel on which workers hear cancel requests for running jobs; the payload is the row id. */
export const CANCEL_CHANNEL = "porter_cancel";

export type CancelParams = {
  jobId: string;
  /** Tenants the caller may see; another tenant's job is reported as not found. Omit for operators. */
  tenantIds?: readonly string[];
  /** Job types the caller may see; a job of another type is reported as not found, like another tenant's. Omit for any. */
  jobTypes?: readonly string[];
  reason?: string;
  actor: string;
  /** Write an audit row in the same transaction (operator actions). */
  audit?: boolean;
  now?: Date;
};

/** Who may cancel what, shared by `cancelJob` and the bulk `cancelJobs`. */
type CancelScope = {
  jobIds: readonly string[];
  tenantIds: readonly string[] | null;
  jobTypes: readonly string[] | null;
  reason: string | null;
  actor: string;
  now: Date | null;
};

const scopeArgs = (s: CancelScope) => [s.jobIds, s.tenantIds, s.reason, s.actor, s.now, s.jobTypes];
/** The jobs of $1 within the tenant ($2) and job-type ($6) scope, when given. */
const IN_SCOPE = `j.job_id = ANY($1::uuid[]) AND ($2::text[] IS NULL OR j.tenant_id = ANY($2)) AND ($6::text[] IS NULL OR j.job_type = ANY($6))`;

/**
 * Transition `cancel` (sql/transitions.ts): READY/RETRY_WAIT → CANCELLED, at once. The queued
 * rows leave the hot table and are finished as CANCELLED in one statement, with their `cancelled`
 * timeline events and the flow rollups' count. Returns the job ids cancelled (others were not queued, or out of scope).
 */
export const cancelQueuedJobs = async (client: Db, scope: CancelScope): Promise<string[]> => {
  const { rows } = await client.query<{ job_id: string }>(
    `WITH at AS (SELECT coalesce($5::timestamptz, clock_timestamp()) AS t),
     done AS (
       DELETE FROM jobs j WHERE ${IN_SCOPE} AND j.state IN ('READY', 'RETRY_WAIT')
       RETURNING j.*
     ), fin AS (${insertFinished({ state: "'CANCELLED'", finishedAt: "(SELECT t FROM at)" })}
     ), flow AS (${flowUpsertSql("done", "(SELECT t FROM at)", { cancelled: "count(*)" })})
     INSERT INTO job_events (job_id, at, kind, attempt, actor, data)
     SELECT job_id, (SELECT t FROM at), 'cancelled', attempt, $4, jsonb_build_object('reason', $3::text) FROM done
     RETURNING job_id::text`,
    scopeArgs(scope),
  );
  return rows.map((r) => r.job_id);
};

/**
 * Asks RUNNING jobs to stop (no state change: `request_cancel` in sql/transitions.ts): their
 * workers hear it by NOTIFY and on their next heartbeat, abort the handler's signal and fail the
 * attempt as CANCELLED when it stops. The first request's time and reason are kept. Returns the
 * job ids asked.
 */
export const requestCancel = async (client: Db, scope: CancelScope): Promise<string[]> => {
  const { rows } = await client.query<{ job_id: string }>(
    `WITH at AS (SELECT coalesce($5::timestamptz, clock_timestamp()) AS t),
     req AS (
       UPDATE jobs j SET cancel_requested_at = coalesce(j.cancel_requested_at, (SELECT t FROM at)),
                         cancel_reason = coalesce(j.cancel_reason, $3)
        WHERE ${IN_SCOPE} AND ${isRunningById()}
       RETURNING j.id, j.job_id, j.attempt
     ), ev AS (
       INSERT INTO job_events (job_id, at, kind, attempt, actor, data)
       SELECT job_id, (SELECT t FROM at), 'cancel_requested', attempt, $4, jsonb_build_object('reason', $3::text) FROM req
     )
     SELECT job_id::text, pg_notify('${CANCEL_CHANNEL}', id::text) FROM req`,
    scopeArgs(scope),
  );
  return rows.map((r) => r.job_id);
};

/**
 * Cancels a job. Queued work (READY, RETRY_WAIT) is CANCELLED at once. Running work gets a cancel
 * request: its worker hears it (NOTIFY, and on its next heartbeat), aborts the handler's signal and
 * records CANCELLED when the handler stops. Cancelling a cancelled job is a no-op; cancelling one
 * that finished otherwise is a 409; an unknown job (or one outside `tenantIds`/`jobTypes`) is a
 * 404 — the same answer, so a caller cannot tell an out-of-scope job exists.
 */
export const cancelJob = async (db: Db, params: CancelParams): Promise<{ job_id: string; status: TJobState }> =>
  inTransaction(db, async (client) => {
    const scope: CancelScope = {
      jobIds: [params.jobId],
      tenantIds: params.tenantIds ?? null,
      jobTypes: params.jobTypes ?? null,
      reason: params.reason ?? null,
      actor: params.actor,
      now: params.now ?? null,
    };
    let status: TJobState | null = (await cancelQueuedJobs(client, scope)).length ? "CANCELLED" : null;
    if (!status && (await requestCancel(client, scope)).length) status = "RUNNING";
    if (!status) {
      const { rows } = await client.query<{ state: TJobState }>(
        `SELECT state FROM finished_jobs
          WHERE job_id = $1 AND ($2::text[] IS NULL OR tenant_id = ANY($2)) AND ($3::text[] IS NULL OR job_type = ANY($3))`,
        [params.jobId, scope.tenantIds, scope.jobTypes],
      );
      const finished = rows[0]?.state;
      if (!finished) throw new AppError("NOT_FOUND", { message: `job ${params.jobId} not found` });
      if (finished !== "CANCELLED") {
        throw new AppError("CONFLICT", { message: `job ${params.jobId} already finished as ${finished}`, details: { status: finished } });
      }
      return { job_id: params.jobId, status: finished };
    }
    if (params.audit) {
      await writeAudit(client, [
        { actor: params.actor, action: "job.cancel", objectType: "job", objectId: params.jobId, after: { status }, reason: params.reason },
      ]);
    }
    return { job_id: params.jobId, status };
  });

/** What a bulk cancel did: queued jobs cancelled at once, running ones asked to stop, the rest skipped. */
export type BulkCancelOutcome = { cancelled: string[]; cancel_requested: string[]; skipped: string[] };

/**
 * Cancels many jobs in one transaction (an operator's bulk action), with the statements of
 * `cancelJob`: READY and RETRY_WAIT jobs move to CANCELLED at once; RUNNING jobs get a cancel
 * request; finished or unknown ids are skipped. Each changed job gets its timeline event and an
 * audit row (`job.cancel`), in the same transaction.
 */
export const cancelJobs = async (db: Db, params: { jobIds: string[]; actor: string; reason?: string }): Promise<BulkCancelOutcome> => {
  if (params.jobIds.length === 0) return { cancelled: [], cancel_requested: [], skipped: [] };
  return inTransaction(db, async (client) => {
    const scope: CancelScope = { jobIds: params.jobIds, tenantIds: null, jobTypes: null, reason: params.reason ?? null, actor: params.actor, now: null };
    const cancelled = await cancelQueuedJobs(client, scope);
    const requested = await requestCancel(client, scope);
    const touched = new Set([...cancelled, ...requested]);
    await writeAudit(client, [
      ...cancelled.map((id) => ({
        actor: params.actor,
        action: "job.cancel",
        objectType: "job",
        objectId: id,
        after: { status: "CANCELLED" },
        reason: params.reason ?? null,
      })),
      ...requested.map((id) => ({
        actor: params.actor,
        action: "job.cancel",
        objectType: "job",
        objectId: id,
        after: { status: "RUNNING", cancel_requested: true },
        reason: params.reason ?? null,
      })),
    ]);
    return { cancelled, cancel_requested: requested, skipped: params.jobIds.filter((id) => !touched.has(id)) };
  });
};
