import { writeAudit } from "../control-plane/audit";
import { type Db, inTransaction } from "../db";
import { READY_CHANNEL } from "./enqueue-insert";

/** What "retry now" did: jobs whose backoff was cut short, and ids that were not waiting for a retry. */
export type RetryNowOutcome = { retried: string[]; skipped: string[] };

/**
 * "Retry now" for jobs waiting out a retry backoff (RETRY_WAIT): their run_at becomes now, so the
 * next claim takes them, and their pools' workers are woken (NOTIFY). Not a transition (the state
 * stays RETRY_WAIT; `retry_now` in sql/transitions.ts). Jobs in any other state are skipped (a
 * DEAD job is redriven instead, see redriveJobs). Each retried job gets a `retry_now` timeline
 * event with the actor and an audit row, in one transaction.
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
