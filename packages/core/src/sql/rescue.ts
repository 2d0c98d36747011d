import { isRunningById } from "./fence";
import { insertAttempt, insertFinished } from "./finish";
import { flowHistogramsSql, flowUpsertSql, waitMsSql } from "./flow-write";

// Every rescued row, for the flow rollups: the state it reached, whether its attempt had started,
// and the attempt's wait (its claim − the ready time as the claim saw it: a requeued row's run_at is new).
const RESCUED = `(SELECT s.queue_id, s.job_type, s.tenant_id, 'READY' AS next_state, s.is_started, ${waitMsSql("s.ready_at")} AS wait_ms FROM requeued s
                  UNION ALL SELECT s.queue_id, s.job_type, s.tenant_id, s.next_state, s.is_started, ${waitMsSql("s.ready_at")} FROM done s)`;

/**
 * The rescue of RUNNING jobs whose worker is gone, shared by `rescueExpiredLeases` (the lease ran
 * out) and `rescueLostWorkers` (the worker's heartbeat row went stale): one statement that locks
 * the selected rows with SKIP LOCKED and re-checks `state = 'RUNNING'` in every write, so a job
 * acked meanwhile is never overwritten, and the lost worker's late ack finds its fence gone.
 *
 * Per row: a cancel requested → CANCELLED; past its deadline → EXPIRED. An attempt that started
 * burns: with attempts left the job is READY again (outcome `lease_expired`, its error kept as
 * `last_error`), otherwise DEAD. An attempt that never started (`started_at` NULL: a prefetched job
 * still in its worker's buffer) is not counted: READY with the attempt number back, recorded as
 * `not_started`. Every rescued attempt gets its `job_attempts` row. The structured error carries the
 * job's last durable checkpoint (`last_checkpoint`), which stays on the row for the next attempt.
 *
 * The flow rollups count the started attempts rescued as lease expiries (worker loss) and the jobs
 * finished here by outcome; a not-started release is neither (flow-write.ts). Every rescued attempt,
 * started or not, adds its wait to the wait histogram: the claim counted its start, and the
 * histogram is written where an attempt ends.
 *
 * Parameters: $1 now (null: the clock), $2 batch size, then the caller's. `select` is a predicate
 * on `j` (the job row) and `(SELECT t FROM at)`; `code` and `message` are SQL expressions for the
 * started attempts' structured error. The statement of transitions `rescue_expired_lease` and
 * `rescue_lost_worker` (sql/transitions.ts).
 */
export const rescueSql = (opts: { select: string; code: string; message: string }): string => `
  WITH at AS (SELECT coalesce($1::timestamptz, clock_timestamp()) AS t),
  expired AS (
    SELECT j.id, j.started_at IS NOT NULL AS is_started, j.attempt AS ended_attempt, greatest(j.run_at, j.created_at) AS ready_at,
           CASE WHEN j.cancel_requested_at IS NOT NULL THEN 'CANCELLED'
                WHEN j.deadline_at IS NOT NULL AND j.deadline_at <= (SELECT t FROM at) THEN 'EXPIRED'
                WHEN j.started_at IS NOT NULL AND j.attempt >= j.max_attempts THEN 'DEAD'
                ELSE 'READY' END AS next_state
      FROM jobs j
     WHERE j.state = 'RUNNING' AND (${opts.select})
     ORDER BY j.lease_until
     LIMIT $2
     FOR UPDATE SKIP LOCKED
  ), err AS (
    SELECT e.id,
           CASE WHEN e.is_started
                THEN jsonb_build_object('code', ${opts.code}, 'class', 'lease_expired', 'message', ${opts.message},
                       'worker_version', NULL, 'attempt', j.attempt, 'trace_id', j.trace_id, 'last_checkpoint', j.checkpoint,
                       'worker_id', j.lease_owner)
                ELSE jsonb_build_object('code', 'NOT_STARTED', 'class', 'lease_expired',
                       'message', 'claimed by worker ' || coalesce(j.lease_owner, '?') || ' into its prefetch buffer, released before it started ('
                                  || ${opts.message} || '); not counted against max_attempts',
                       'worker_version', NULL, 'attempt', j.attempt, 'trace_id', j.trace_id, 'last_checkpoint', j.checkpoint,
                       'worker_id', j.lease_owner)
           END AS error
      FROM expired e JOIN jobs j ON j.id = e.id
  ), requeued AS (
    UPDATE jobs j
       SET state = 'READY', run_at = (SELECT t FROM at), lease_until = NULL,
           attempt = j.attempt - (NOT e.is_started)::int,
           last_error = CASE WHEN e.is_started THEN err.error ELSE j.last_error END
      FROM expired e JOIN err ON err.id = e.id
     WHERE j.id = e.id AND e.next_state = 'READY' AND ${isRunningById()}
    RETURNING j.*, err.error AS err, e.is_started, e.ended_attempt, e.ready_at
  ), requeued_att AS (${insertAttempt({
    source: "requeued AS done",
    attempt: "done.ended_attempt",
    outcome: "CASE WHEN done.is_started THEN 'lease_expired' ELSE 'not_started' END",
    finishedAt: "(SELECT t FROM at)",
    error: "done.err",
  })}
  ), done AS (
    DELETE FROM jobs j USING expired e, err
     WHERE j.id = e.id AND err.id = e.id AND e.next_state <> 'READY' AND ${isRunningById()}
    RETURNING j.*, e.next_state, e.is_started, err.error AS err, e.ready_at
  ), fin AS (${insertFinished({
    state: "done.next_state",
    finishedAt: "(SELECT t FROM at)",
    error: "done.err",
    attempt: "done.attempt - (NOT done.is_started)::int",
  })}
  ), att AS (${insertAttempt({
    outcome: "CASE WHEN done.next_state = 'CANCELLED' THEN 'cancelled' WHEN NOT done.is_started THEN 'not_started' ELSE 'lease_expired' END",
    finishedAt: "(SELECT t FROM at)",
    error: "done.err",
  })}
  ), ev AS (
    INSERT INTO job_events (job_id, at, kind, attempt, actor, data)
    SELECT job_id, (SELECT t FROM at), lower(next_state), attempt, lease_owner,
           jsonb_build_object('code', err ->> 'code') FROM done
  ), flow AS (${flowUpsertSql(RESCUED, "(SELECT t FROM at)", {
    lease_expiries: "count(*) FILTER (WHERE s.is_started)",
    dead: "count(*) FILTER (WHERE s.next_state = 'DEAD')",
    cancelled: "count(*) FILTER (WHERE s.next_state = 'CANCELLED')",
    expired: "count(*) FILTER (WHERE s.next_state = 'EXPIRED')",
    wait_ms_sum: "sum(s.wait_ms)",
  })}
  ), flow_wait AS (${flowHistogramsSql("(SELECT t FROM at)", [{ source: RESCUED, kind: "w", ms: "s.wait_ms" }])}
  )
  SELECT 'READY' AS state, count(*)::text AS n, count(*) FILTER (WHERE NOT is_started)::text AS not_started FROM requeued
  UNION ALL SELECT next_state, count(*)::text, count(*) FILTER (WHERE NOT is_started)::text FROM done GROUP BY next_state`;

/** What a rescue did: jobs requeued and finished, by state; `notStarted` of them had not started (not counted). */
export type RescueOutcome = { requeued: number; dead: number; cancelled: number; expired: number; notStarted: number };

/** Reads the counts of a {@link rescueSql} statement. */
export const rescueOutcome = (rows: Array<{ state: string; n: string; not_started: string }>): RescueOutcome => {
  const count = (state: string) => rows.filter((r) => r.state === state).reduce((n, r) => n + Number(r.n), 0);
  return {
    requeued: count("READY"),
    dead: count("DEAD"),
    cancelled: count("CANCELLED"),
    expired: count("EXPIRED"),
    notStarted: rows.reduce((n, r) => n + Number(r.not_started), 0),
  };
};
