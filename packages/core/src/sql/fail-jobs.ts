import type { TJobError } from "@porter/contracts";
import type { Db } from "../db";
import type { FailureDecision } from "../policy/decide";
import type { LeaseRef } from "./extend-leases";
import { fenceSql } from "./fence";
import { insertAttempt, insertFinished } from "./finish";
import { flowHistogramsSql, flowRetryCodesSql, flowUpsertSql, msBetween, readyAtBeforeSql, waitMsSql } from "./flow-write";

// Both outcomes of the batch, for the flow rollups: state reached, error code, run time, wait (a
// retried row's run_at is the new one: its ready time is read from the version before the update).
const ENDED = `(SELECT s.queue_id, s.job_type, s.tenant_id, 'RETRY_WAIT' AS next_state, s.err::jsonb ->> 'code' AS code,
                       ${msBetween("coalesce(s.started_at, s.claimed_at)", "(SELECT t FROM at)")} AS run_ms,
                       ${waitMsSql("s.ready_at")} AS wait_ms FROM retried s
                UNION ALL
                SELECT s.queue_id, s.job_type, s.tenant_id, s.next_state, s.err::jsonb ->> 'code',
                       ${msBetween("coalesce(s.started_at, s.claimed_at)", "(SELECT t FROM at)")}, ${waitMsSql()} FROM done s)`;

export type Failure = LeaseRef & {
  /** How the attempt ended. */
  outcome: "failed" | "timed_out" | "cancelled";
  error: TJobError;
  /** Where the job goes next, from `decideFailure`. */
  next: FailureDecision;
  /** The attempt's progress (JSON) reported since its last heartbeat, if any: recorded with the failure. */
  progress?: string | null;
};
export type FailOutcome = { applied: Array<{ id: string; state: FailureDecision["state"] }>; stale: string[] };

/**
 * Records failed attempts in one statement: retries go to RETRY_WAIT with their `run_at` (the
 * job stays in the hot table); dead, cancelled and expired jobs move to `finished_jobs` with their
 * structured error, marked partial when they recorded effects. Fenced like the ack: only a RUNNING
 * row under the same token and attempt changes; the rest are reported stale. The last attempt's owner and
 * token stay on a retrying row as history; no check accepts them once the state left RUNNING.
 * A progress report no heartbeat carried yet is recorded too. The flow rollups (outcomes, throttles,
 * retries by code, run time; the wait and run histograms in one upsert) are added in the same
 * statement (flow-write.ts). Transition `fail` (sql/transitions.ts).
 */
export const failJobs = async (db: Db, items: Failure[], now?: Date): Promise<FailOutcome> => {
  if (items.length === 0) return { applied: [], stale: [] };
  const { rows } = await db.query<{ id: string; state: FailureDecision["state"] }>({
    name: "porter.fail",
    text: `WITH input AS (
       SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::text[], $4::timestamptz[], $5::text[], $6::text[], $8::int[], $9::text[])
         AS t(id, token, next_state, run_at, error, outcome, attempt, progress)
     ), at AS (SELECT coalesce($7::timestamptz, clock_timestamp()) AS t),
     retried AS (
       UPDATE jobs j
          SET state = 'RETRY_WAIT', run_at = i.run_at, last_error = i.error::jsonb, lease_until = NULL,
              progress = coalesce(i.progress::jsonb, j.progress)
         FROM input i
        WHERE ${fenceSql()} AND i.next_state = 'RETRY_WAIT'
       RETURNING j.*, i.outcome, i.error AS err, ${readyAtBeforeSql} AS ready_at
     ), retried_att AS (${insertAttempt({ source: "retried AS done", outcome: "done.outcome", finishedAt: "(SELECT t FROM at)", error: "done.err::jsonb", retryAt: "done.run_at" })}
     ), done AS (
       DELETE FROM jobs j USING input i
        WHERE ${fenceSql()} AND i.next_state <> 'RETRY_WAIT'
       RETURNING j.*, i.next_state, i.outcome, i.error AS err, i.progress AS last_progress
     ), fin AS (${insertFinished({
       state: "done.next_state",
       finishedAt: "(SELECT t FROM at)",
       error: "done.err::jsonb",
       progress: "coalesce(done.last_progress::jsonb, done.progress)",
     })}
     ), att AS (${insertAttempt({ outcome: "done.outcome", finishedAt: "(SELECT t FROM at)", error: "done.err::jsonb" })}
     ), ev AS (
       INSERT INTO job_events (job_id, at, kind, attempt, actor, data)
       SELECT done.job_id, (SELECT t FROM at), lower(done.next_state), done.attempt, done.lease_owner,
              jsonb_build_object('code', done.err::jsonb ->> 'code', 'class', done.err::jsonb ->> 'class')
         FROM done
     ), flow AS (${flowUpsertSql(ENDED, "(SELECT t FROM at)", {
       retried: "count(*) FILTER (WHERE s.next_state = 'RETRY_WAIT')",
       dead: "count(*) FILTER (WHERE s.next_state = 'DEAD')",
       cancelled: "count(*) FILTER (WHERE s.next_state = 'CANCELLED')",
       expired: "count(*) FILTER (WHERE s.next_state = 'EXPIRED')",
       throttles: "count(*) FILTER (WHERE s.code = 'RATE_LIMITED')",
       runs: "count(*)",
       run_ms_sum: "sum(s.run_ms)",
       wait_ms_sum: "sum(s.wait_ms)",
     })}
     ), flow_hist AS (${flowHistogramsSql("(SELECT t FROM at)", [
       { source: ENDED, kind: "w", ms: "s.wait_ms" },
       { source: ENDED, kind: "r", ms: "s.run_ms" },
     ])}
     ), flow_codes AS (${flowRetryCodesSql(`(SELECT * FROM ${ENDED} e WHERE e.next_state = 'RETRY_WAIT')`, "(SELECT t FROM at)", "s.code")}
     )
     SELECT id::text, 'RETRY_WAIT' AS state FROM retried
     UNION ALL SELECT id::text, next_state FROM done`,
    values: [
      items.map((i) => i.id),
      items.map((i) => i.leaseToken),
      items.map((i) => i.next.state),
      items.map((i) => (i.next.state === "RETRY_WAIT" ? i.next.runAt : null)),
      items.map((i) => JSON.stringify(i.error)),
      items.map((i) => i.outcome),
      now ?? null,
      items.map((i) => i.attempt),
      items.map((i) => i.progress ?? null),
    ],
  });
  const applied = new Set(rows.map((r) => r.id));
  return { applied: rows, stale: items.map((i) => i.id).filter((id) => !applied.has(id)) };
};
