import { writeAudit } from "./audit";
import { inTransaction, type Db } from "./db";
import { CANCEL_CHANNEL } from "./sql/cancel-job";
import { READY_CHANNEL } from "./sql/enqueue-jobs";
import { insertFinished } from "./sql/finish";

/** What a bulk cancel did: queued jobs cancelled at once, running ones asked to stop, the rest skipped. */
export type BulkCancelOutcome = { cancelled: string[]; cancel_requested: string[]; skipped: string[] };

/**
 * Cancels many jobs in one transaction (an operator's bulk action): READY and RETRY_WAIT jobs move
 * to CANCELLED at once; RUNNING jobs get a cancel request (their workers hear it by NOTIFY and on
 * their next heartbeat, as with cancelJob); finished or unknown ids are skipped. Each changed job
 * gets its timeline event and an audit row (`job.cancel`), in the same transaction.
 */
export const cancelJobs = async (db: Db, params: { jobIds: string[]; actor: string; reason?: string }): Promise<BulkCancelOutcome> => {
  if (params.jobIds.length === 0) return { cancelled: [], cancel_requested: [], skipped: [] };
  return inTransaction(db, async (client) => {
    const args = [params.jobIds, params.reason ?? null, params.actor];
    // Queued work leaves the hot table in one statement, exactly as cancelJob does it per job.
    const queued = await client.query<{ job_id: string }>(
      `WITH at AS (SELECT clock_timestamp() AS t),
       done AS (
         DELETE FROM jobs j WHERE j.job_id = ANY($1::uuid[]) AND j.state IN ('READY', 'RETRY_WAIT') RETURNING j.*
       ), fin AS (${insertFinished({ state: "'CANCELLED'", finishedAt: "(SELECT t FROM at)" })}),
       ev AS (
         INSERT INTO job_events (job_id, at, kind, attempt, actor, data)
         SELECT job_id, (SELECT t FROM at), 'cancelled', attempt, $3, jsonb_build_object('reason', $2::text) FROM done
       )
       SELECT job_id::text FROM done`,
      args,
    );
    const running = await client.query<{ job_id: string }>(
      `WITH at AS (SELECT clock_timestamp() AS t),
       req AS (
         UPDATE jobs j SET cancel_requested_at = coalesce(j.cancel_requested_at, (SELECT t FROM at)),
                           cancel_reason = coalesce(j.cancel_reason, $2)
          WHERE j.job_id = ANY($1::uuid[]) AND j.state = 'RUNNING'
         RETURNING j.id, j.job_id, j.attempt
       ), ev AS (
         INSERT INTO job_events (job_id, at, kind, attempt, actor, data)
         SELECT job_id, (SELECT t FROM at), 'cancel_requested', attempt, $3, jsonb_build_object('reason', $2::text) FROM req
       )
       SELECT job_id::text, pg_notify('${CANCEL_CHANNEL}', id::text) FROM req`,
      args,
    );
    const cancelled = queued.rows.map((r) => r.job_id);
    const requested = running.rows.map((r) => r.job_id);
    const touched = new Set([...cancelled, ...requested]);
    await writeAudit(client, [
      ...cancelled.map((id) => ({ actor: params.actor, action: "job.cancel", objectType: "job", objectId: id, after: { status: "CANCELLED" }, reason: params.reason ?? null })),
      ...requested.map((id) => ({ actor: params.actor, action: "job.cancel", objectType: "job", objectId: id, after: { status: "RUNNING", cancel_requested: true }, reason: params.reason ?? null })),
    ]);
    return { cancelled, cancel_requested: requested, skipped: params.jobIds.filter((id) => !touched.has(id)) };
  });
};

/** What "retry now" did: jobs whose backoff was cut short, and ids that were not waiting for a retry. */
export type RetryNowOutcome = { retried: string[]; skipped: string[] };

/**
 * "Retry now" for jobs waiting out a retry backoff (RETRY_WAIT): their run_at becomes now, so the
 * next claim takes them, and their pools' workers are woken (NOTIFY). Jobs in any other state are
 * skipped (a DEAD job is redriven instead, see redriveJobs). Each retried job gets a `retry_now`
 * timeline event with the actor and an audit row, in one transaction.
 */
export const retryJobsNow = async (db: Db, params: { jobIds: string[]; actor: string; reason?: string }): Promise<RetryNowOutcome> => {
  if (params.jobIds.length === 0) return { retried: [], skipped: [] };
  return inTransaction(db, async (client) => {
    const { rows } = await client.query<{ job_id: string; run_at: Date }>(
      `WITH at AS (SELECT clock_timestamp() AS t),
       up AS (
         UPDATE jobs j SET run_at = (SELECT t FROM at)
          WHERE j.job_id = ANY($1::uuid[]) AND j.state = 'RETRY_WAIT'
         RETURNING j.job_id, j.queue_id, j.attempt
       ), ev AS (
         INSERT INTO job_events (job_id, at, kind, attempt, actor, data)
         SELECT job_id, (SELECT t FROM at), 'retry_now', attempt, $2, jsonb_build_object('reason', $3::text) FROM up
       ), wake AS (
         SELECT pg_notify('${READY_CHANNEL}', q.pool_id) FROM (SELECT DISTINCT queue_id FROM up) u JOIN queues q ON q.id = u.queue_id
       )
       SELECT job_id::text, (SELECT count(*) FROM wake) AS woken FROM up`,
      [params.jobIds, params.actor, params.reason ?? null],
    );
    const retried = rows.map((r) => r.job_id);
    await writeAudit(
      client,
      retried.map((id) => ({
        actor: params.actor,
        action: "job.retry",
        objectType: "job",
        objectId: id,
        before: { status: "RETRY_WAIT" },
        after: { status: "RETRY_WAIT", run_at: "now" },
        reason: params.reason ?? null,
      })),
    );
    const done = new Set(retried);
    return { retried, skipped: params.jobIds.filter((id) => !done.has(id)) };
  });
};
