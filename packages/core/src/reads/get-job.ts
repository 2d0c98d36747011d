import { JOB_CONTRACT, type TJobError, type TJobProgress, type TJobState, type TJobStatus, type TTimelineEvent } from "@porter/contracts";
import type { Db } from "../db";
import { dlqTimelineEvents } from "../dlq/timeline";
import { type AttemptRow, buildTimeline, type EventRow } from "./timeline";

type JobRow = {
  job_id: string;
  job_type: string;
  queue_id: string;
  tenant_id: string;
  payload: Record<string, unknown>;
  priority: number;
  idempotency_key: string;
  state: TJobState;
  attempt: number;
  max_attempts: number;
  timeout_s: number;
  not_before: Date | null;
  deadline_at: Date | null;
  run_at: Date | null;
  trace_id: string;
  traceparent: string | null;
  contract_version: string;
  created_at: Date;
  claimed_at: Date | null;
  lease_owner: string | null;
  lease_until: Date | null;
  heartbeat_at: Date | null;
  cancel_requested_at: Date | null;
  finished_at: Date | null;
  result: unknown;
  error: TJobError | null;
  partial: boolean;
  last_worker: string | null;
  progress: TJobProgress | null;
  checkpoint: unknown;
};

const iso = (d: Date | null) => (d ? d.toISOString() : null);

/**
 * A job wherever it is (hot or finished table), with its attempts and timeline. `tenantIds` and
 * `jobTypes` scope the lookup (a producer key's scope; omitted = any): a job outside the scope
 * is reported as absent (null), never as forbidden, so a caller cannot tell it exists.
 */
export const getJob = async (
  db: Db,
  jobId: string,
  options: { tenantIds?: readonly string[]; jobTypes?: readonly string[] } = {},
): Promise<TJobStatus | null> => {
  const scope = options.tenantIds ? [...options.tenantIds] : null;
  const types = options.jobTypes ? [...options.jobTypes] : null;
  const { rows } = await db.query<JobRow>(
    `SELECT job_id::text, job_type, queue_id, tenant_id, payload, priority, idempotency_key, state, attempt, max_attempts,
            timeout_s, not_before, deadline_at, run_at, trace_id, contract_version, created_at, claimed_at,
            CASE WHEN state = 'RUNNING' THEN lease_owner END AS lease_owner,
            CASE WHEN state = 'RUNNING' THEN lease_until END AS lease_until,
            CASE WHEN state = 'RUNNING' THEN heartbeat_at END AS heartbeat_at,
            cancel_requested_at, NULL::timestamptz AS finished_at, NULL::jsonb AS result,
            CASE WHEN state = 'RETRY_WAIT' THEN last_error END AS error, false AS partial, NULL AS last_worker,
            progress, checkpoint, traceparent
       FROM jobs WHERE job_id = $1 AND ($2::text[] IS NULL OR tenant_id = ANY($2)) AND ($3::text[] IS NULL OR job_type = ANY($3))
     UNION ALL
     SELECT job_id::text, job_type, queue_id, tenant_id, payload, priority, idempotency_key, state, attempt, max_attempts,
            timeout_s, not_before, deadline_at, NULL, trace_id, contract_version, created_at, claimed_at,
            NULL, NULL, NULL, cancel_requested_at, finished_at, result, error, partial, last_worker,
            progress, checkpoint, traceparent
       FROM finished_jobs WHERE job_id = $1 AND ($2::text[] IS NULL OR tenant_id = ANY($2)) AND ($3::text[] IS NULL OR job_type = ANY($3))`,
    [jobId, scope, types],
  );
  const job = rows[0];
  if (!job) return null;
  const [attempts, events, triage] = await Promise.all([
    db.query<AttemptRow>(
      `SELECT attempt, worker_id, started_at, finished_at, heartbeat_at, outcome, error, retry_at
         FROM job_attempts WHERE job_id = $1 ORDER BY id`,
      [jobId],
    ),
    db.query<EventRow>(`SELECT at, kind, attempt, actor, data FROM job_events WHERE job_id = $1 ORDER BY id`, [jobId]),
    dlqTimelineEvents(db, jobId),
  ]);
  const timeline: TTimelineEvent[] = buildTimeline({
    createdAt: job.created_at,
    attempts: attempts.rows,
    events: [...events.rows, ...triage],
    running:
      job.state === "RUNNING" && job.claimed_at
        ? { attempt: job.attempt, claimedAt: job.claimed_at, workerId: job.lease_owner, heartbeatAt: job.heartbeat_at, leaseUntil: job.lease_until }
        : null,
    succeeded:
      job.state === "SUCCEEDED" && job.finished_at
        ? { attempt: job.attempt, claimedAt: job.claimed_at ?? job.finished_at, workerId: job.last_worker, finishedAt: job.finished_at }
        : null,
  });
  return {
    contract: JOB_CONTRACT,
    contract_version: job.contract_version,
    job_id: job.job_id,
    job_type: job.job_type,
    tenant_id: job.tenant_id,
    payload: job.payload,
    priority: job.priority,
    idempotency_key: job.idempotency_key,
    attempt: job.attempt,
    max_attempts: job.max_attempts,
    timeout_s: job.timeout_s,
    not_before: iso(job.not_before),
    deadline_at: iso(job.deadline_at),
    trace_id: job.trace_id,
    traceparent: job.traceparent,
    created_at: job.created_at.toISOString(),
    status: job.state,
    queue_id: job.queue_id,
    run_at: iso(job.run_at),
    finished_at: iso(job.finished_at),
    cancel_requested: job.cancel_requested_at !== null,
    partial: job.partial,
    result: job.result ?? null,
    error: job.error,
    progress: job.progress,
    checkpoint: job.checkpoint ?? null,
    timeline,
  };
};
