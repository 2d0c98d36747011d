import { AppError, type TJobState } from "@porter/contracts";
import { writeAudit } from "../audit";
import { inTransaction, type Db } from "../db";
import { insertFinished } from "./finish";

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

/**
 * Cancels a job. Queued work (READY, RETRY_WAIT) is CANCELLED at once. Running work gets a cancel
 * request: its worker hears it (NOTIFY, and on its next heartbeat), aborts the handler's signal and
 * records CANCELLED when the handler stops. Cancelling a cancelled job is a no-op; cancelling one
 * that finished otherwise is a 409; an unknown job (or one outside `tenantIds`/`jobTypes`) is a
 * 404 — the same answer, so a caller cannot tell an out-of-scope job exists.
 */
export const cancelJob = async (db: Db, params: CancelParams): Promise<{ job_id: string; status: TJobState }> =>
  inTransaction(db, async (client) => {
    const scope = params.tenantIds ? [...params.tenantIds] : null;
    const types = params.jobTypes ? [...params.jobTypes] : null;
    const args = [params.jobId, scope, params.reason ?? null, params.actor, params.now ?? null, types];
    const queued = await client.query(
      `WITH at AS (SELECT coalesce($5::timestamptz, clock_timestamp()) AS t),
       done AS (
         DELETE FROM jobs j
          WHERE j.job_id = $1 AND j.state IN ('READY', 'RETRY_WAIT') AND ($2::text[] IS NULL OR j.tenant_id = ANY($2))
            AND ($6::text[] IS NULL OR j.job_type = ANY($6))
         RETURNING j.*
       ), fin AS (${insertFinished({ state: "'CANCELLED'", finishedAt: "(SELECT t FROM at)" })})
       INSERT INTO job_events (job_id, at, kind, attempt, actor, data)
       SELECT job_id, (SELECT t FROM at), 'cancelled', attempt, $4, jsonb_build_object('reason', $3::text) FROM done
       RETURNING job_id`,
      args,
    );
    let status: TJobState | null = queued.rowCount ? "CANCELLED" : null;
    if (!status) {
      const running = await client.query<{ id: string }>(
        `WITH at AS (SELECT coalesce($5::timestamptz, clock_timestamp()) AS t),
         req AS (
           UPDATE jobs j SET cancel_requested_at = coalesce(j.cancel_requested_at, (SELECT t FROM at)),
                             cancel_reason = coalesce(j.cancel_reason, $3)
            WHERE j.job_id = $1 AND j.state = 'RUNNING' AND ($2::text[] IS NULL OR j.tenant_id = ANY($2))
              AND ($6::text[] IS NULL OR j.job_type = ANY($6))
           RETURNING j.id, j.job_id, j.attempt
         ), ev AS (
           INSERT INTO job_events (job_id, at, kind, attempt, actor, data)
           SELECT job_id, (SELECT t FROM at), 'cancel_requested', attempt, $4, jsonb_build_object('reason', $3::text) FROM req
         )
         SELECT id::text, pg_notify('${CANCEL_CHANNEL}', id::text) FROM req`,
        args,
      );
      if (running.rowCount) status = "RUNNING";
    }
    if (!status) {
      const { rows } = await client.query<{ state: TJobState }>(
        `SELECT state FROM finished_jobs
          WHERE job_id = $1 AND ($2::text[] IS NULL OR tenant_id = ANY($2)) AND ($3::text[] IS NULL OR job_type = ANY($3))`,
        [params.jobId, scope, types],
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
