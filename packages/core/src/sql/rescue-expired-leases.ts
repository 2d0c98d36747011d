import type { Db } from "../db";
import { insertAttempt, insertFinished } from "./finish";

export type RescueOutcome = { requeued: number; dead: number; cancelled: number; expired: number };

/**
 * Recovers jobs whose worker was lost: RUNNING rows whose lease ran out. Each is locked with
 * SKIP LOCKED and re-checked by the writes, so a job acked meanwhile (its row gone or changed) is
 * never overwritten, and a late ack from the lost worker finds its token no longer matches.
 * A lease expiry burns the attempt: with attempts left the job is READY again; otherwise DEAD.
 * A job whose cancel was requested is CANCELLED; one past its deadline is EXPIRED.
 */
export const rescueExpiredLeases = async (db: Db, params: { now?: Date; batch?: number } = {}): Promise<RescueOutcome> => {
  const { rows } = await db.query<{ state: string; n: string }>(
    `WITH at AS (SELECT coalesce($1::timestamptz, clock_timestamp()) AS t),
     expired AS (
       SELECT j.id,
              CASE WHEN j.cancel_requested_at IS NOT NULL THEN 'CANCELLED'
                   WHEN j.deadline_at IS NOT NULL AND j.deadline_at <= (SELECT t FROM at) THEN 'EXPIRED'
                   WHEN j.attempt >= j.max_attempts THEN 'DEAD'
                   ELSE 'READY' END AS next_state
         FROM jobs j
        WHERE j.state = 'RUNNING' AND j.lease_until < (SELECT t FROM at)
        ORDER BY j.lease_until
        LIMIT $2
        FOR UPDATE SKIP LOCKED
     ), err AS (
       SELECT e.id, jsonb_build_object('code', 'LEASE_EXPIRED', 'class', 'lease_expired',
                'message', 'the worker stopped heartbeating; its lease expired at ' || j.lease_until::text,
                'worker_version', NULL, 'attempt', j.attempt, 'trace_id', j.trace_id, 'last_checkpoint', NULL,
                'worker_id', j.lease_owner) AS error
         FROM expired e JOIN jobs j ON j.id = e.id
     ), requeued AS (
       UPDATE jobs j
          SET state = 'READY', run_at = (SELECT t FROM at), lease_until = NULL, last_error = err.error
         FROM expired e JOIN err ON err.id = e.id
        WHERE j.id = e.id AND e.next_state = 'READY' AND j.state = 'RUNNING'
       RETURNING j.*, err.error AS err
     ), requeued_att AS (${insertAttempt({ source: "requeued AS done", outcome: "'lease_expired'", finishedAt: "(SELECT t FROM at)", error: "done.err" })}
     ), done AS (
       DELETE FROM jobs j USING expired e, err
        WHERE j.id = e.id AND err.id = e.id AND e.next_state <> 'READY' AND j.state = 'RUNNING'
       RETURNING j.*, e.next_state, err.error AS err
     ), fin AS (${insertFinished({ state: "done.next_state", finishedAt: "(SELECT t FROM at)", error: "done.err" })}
     ), att AS (${insertAttempt({ outcome: "CASE WHEN done.next_state = 'CANCELLED' THEN 'cancelled' ELSE 'lease_expired' END", finishedAt: "(SELECT t FROM at)", error: "done.err" })}
     ), ev AS (
       INSERT INTO job_events (job_id, at, kind, attempt, actor, data)
       SELECT job_id, (SELECT t FROM at), lower(next_state), attempt, lease_owner,
              jsonb_build_object('code', 'LEASE_EXPIRED') FROM done
     )
     SELECT 'READY' AS state, count(*)::text AS n FROM requeued
     UNION ALL SELECT next_state, count(*)::text FROM done GROUP BY next_state`,
    [params.now ?? null, params.batch ?? 1000],
  );
  const count = (state: string) => rows.filter((r) => r.state === state).reduce((n, r) => n + Number(r.n), 0);
  return { requeued: count("READY"), dead: count("DEAD"), cancelled: count("CANCELLED"), expired: count("EXPIRED") };
};
