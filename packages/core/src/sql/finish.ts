/**
 * The move of a job out of the hot table, shared by every statement that finishes jobs: a
 * `DELETE FROM jobs … RETURNING` CTE named `done` is copied into `finished_jobs` by this INSERT.
 * The expressions are evaluated per row of `done`. The last progress and checkpoint are carried,
 * so the job page shows them once the job finished.
 */
export const insertFinished = (exprs: {
  state: string;
  finishedAt: string;
  result?: string;
  error?: string;
  partial?: string;
  /** The attempts the job used; default `done.attempt`. */
  attempt?: string;
  /** The last progress; default `done.progress` (what the heartbeats wrote). */
  progress?: string;
}): string => `
  INSERT INTO finished_jobs (id, job_id, job_type, queue_id, tenant_id, payload, priority,
                             idempotency_key, state, attempt, max_attempts, timeout_s, not_before, deadline_at,
                             run_at, trace_id, contract_version, created_at, claimed_at, last_worker,
                             cancel_requested_at, cancel_reason, redrive_count, finished_at, result, error, partial,
                             progress, checkpoint, traceparent)
  SELECT done.id, done.job_id, done.job_type, done.queue_id, done.tenant_id, done.payload,
         coalesce(done.base_priority, done.priority), done.idempotency_key, (${exprs.state})::job_state, ${exprs.attempt ?? "done.attempt"}, done.max_attempts,
         done.timeout_s, done.not_before, done.deadline_at, done.run_at, done.trace_id, done.contract_version,
         done.created_at, done.claimed_at, done.lease_owner, done.cancel_requested_at, done.cancel_reason,
         done.redrive_count, ${exprs.finishedAt}, ${exprs.result ?? "NULL"}, ${exprs.error ?? "NULL"},
         ${exprs.partial ?? "EXISTS (SELECT 1 FROM job_effects e WHERE e.job_id = done.job_id)"},
         ${exprs.progress ?? "done.progress"}, done.checkpoint, done.traceparent
    FROM done`;

/** The attempt row recorded when a running attempt ends; reads `done` (or any row source aliased so). */
export const insertAttempt = (exprs: {
  outcome: string;
  finishedAt: string;
  error?: string;
  retryAt?: string;
  source?: string;
  /** The attempt's number; default `done.attempt`. */
  attempt?: string;
}): string => `
  INSERT INTO job_attempts (job_id, attempt, worker_id, lease_token, started_at, finished_at, heartbeat_at, outcome, error, retry_at)
  SELECT done.job_id, ${exprs.attempt ?? "done.attempt"}, done.lease_owner, done.lease_token, coalesce(done.claimed_at, ${exprs.finishedAt}),
         ${exprs.finishedAt}, done.heartbeat_at, (${exprs.outcome})::attempt_outcome, ${exprs.error ?? "NULL"},
         ${exprs.retryAt ?? "NULL"}
    FROM ${exprs.source ?? "done"}`;
