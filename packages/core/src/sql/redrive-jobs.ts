import { AppError } from "@porter/contracts";
import { writeAudit } from "../control-plane/audit";
import { type Db, inTransaction } from "../db";
import { READY_CHANNEL } from "./enqueue-insert";
import { reserveClocksSql } from "./fair-clock";

export type RedriveFilter = { queueId?: string; jobType?: string; tenantId?: string; errorCode?: string };
export type RedriveParams = {
  /** Redrive these jobs… */
  jobIds?: string[];
  /** …or every DEAD job matching this filter (at most `limit`). */
  filter?: RedriveFilter;
  /** Also redrive partially completed jobs and jobs past their deadline (the deadline is cleared). */
  force?: boolean;
  actor: string;
  reason?: string;
  limit?: number;
  /** Count what would happen, change nothing. */
  dryRun?: boolean;
  now?: Date;
};
/** Who asked for a move, and why: recorded on each job's `redriven` event and audit row. */
export type MoveDeadJobsParams = {
  jobIds: string[];
  now?: Date | undefined;
  actor: string;
  reason: string | null;
  /** The redrive was forced (partial, permanent, past-deadline jobs let through). */
  isForced: boolean;
  /** The durable redrive this move belongs to (packages/core/src/dlq/redrive-runner.ts), if any. */
  redriveId?: string | null;
};

/** A job moved back: its id and the attempts its dead life had. */
export type MovedJob = { job_id: string; attempts_before: number; group_id: string | null };

/**
 * The move itself, DEAD → READY, on a client inside the caller's transaction: shared by the
 * immediate {@link redriveJobs} and the durable redrive's batches (transition `redrive_run`,
 * packages/core/src/dlq/redrive-runner.ts), so both reset the attempt budget, keep fair share and
 * leave the same lineage. Moves only rows still DEAD (the guard of the DELETE); returns the jobs
 * it moved. Each gets a `redriven` timeline event whose data carries the lineage — redrive_id,
 * attempts_before (the dead life's attempt count), group_id (its failure group), reason, forced —
 * and a `job.redrive` audit row. The caller decides eligibility and holds the rows' locks.
 */
export const moveDeadJobs = async (client: Db, params: MoveDeadJobsParams): Promise<MovedJob[]> => {
  if (params.jobIds.length === 0) return [];
  const { rows } = await client.query<MovedJob & { queue_id: string }>(
    `WITH at AS (SELECT coalesce($2::timestamptz, clock_timestamp()) AS t),
     done AS (DELETE FROM finished_jobs WHERE job_id = ANY($1::uuid[]) AND state = 'DEAD' RETURNING *),
     fresh AS (
       SELECT d.*, row_number() OVER w AS k, count(*) OVER (PARTITION BY d.queue_id, d.tenant_id) AS n,
              (SELECT g.id::text FROM dlq_groups g WHERE g.fingerprint = d.dlq_fingerprint) AS group_id
         FROM done d
       WINDOW w AS (PARTITION BY d.queue_id, d.tenant_id ORDER BY d.job_id) -- creation order (UUIDv7), a key of finished_jobs
     ), clocks AS (
       -- Weighted fair queuing, as at enqueue: a (queue, tenant)'s n redriven jobs take its next n
       -- virtual finish times, so a mass redrive shares the queue by weight instead of jumping
       -- ahead of every other tenant's work. Rows locked in one order, as producers do.
       ${reserveClocksSql("(SELECT queue_id, tenant_id, max(n) AS n FROM fresh GROUP BY 1, 2)")}
     ), back AS (
       INSERT INTO jobs (id, job_id, job_type, queue_id, tenant_id, payload, priority, idempotency_key,
                         state, attempt, max_attempts, timeout_s, not_before, deadline_at, run_at, trace_id,
                         contract_version, created_at, last_error, redrive_count, vft, checkpoint, traceparent)
       SELECT f.id, f.job_id, f.job_type, f.queue_id, f.tenant_id, f.payload, f.priority, f.idempotency_key,
              'READY', 0, f.max_attempts, f.timeout_s, f.not_before,
              CASE WHEN f.deadline_at <= (SELECT t FROM at) THEN NULL ELSE f.deadline_at END,
              (SELECT t FROM at), f.trace_id, f.contract_version, f.created_at, f.error, f.redrive_count + 1,
              c.last_vft - (f.n - f.k)::float8 / c.weight,
              f.checkpoint, -- the redriven job resumes from its last checkpoint, as a retry would
              f.traceparent -- and its attempts stay in the job's trace
         FROM fresh f
         JOIN clocks c ON c.queue_id = f.queue_id AND c.tenant_id = f.tenant_id
       RETURNING job_id, queue_id
     ), ev AS (
       -- The lineage, on the timeline: which redrive, how many attempts the dead life had, its group.
       INSERT INTO job_events (job_id, at, kind, actor, data)
       SELECT f.job_id, (SELECT t FROM at), 'redriven', $3,
              jsonb_build_object('reason', $4::text, 'forced', $5::boolean, 'redrive_id', $6::text,
                                 'attempts_before', f.attempt, 'group_id', f.group_id)
         FROM fresh f JOIN back b ON b.job_id = f.job_id
     )
     SELECT f.job_id::text, f.queue_id, f.attempt AS attempts_before, f.group_id
       FROM fresh f JOIN back b ON b.job_id = f.job_id
      ORDER BY f.job_id`,
    [params.jobIds, params.now ?? null, params.actor, params.reason, params.isForced, params.redriveId ?? null],
  );
  if (rows.length === 0) return [];
  // Wake the pools' workers (delivered at commit, like the enqueue's notify).
  await client.query(`SELECT pg_notify('${READY_CHANNEL}', q.pool_id) FROM queues q WHERE q.id = ANY($1::text[])`, [[...new Set(rows.map((r) => r.queue_id))]]);
  await writeAudit(
    client,
    rows.map((r) => ({
      actor: params.actor,
      action: "job.redrive",
      objectType: "job",
      objectId: r.job_id,
      before: { status: "DEAD" },
      after: { status: "READY", ...(params.redriveId ? { redrive_id: params.redriveId } : {}) },
      reason: params.reason,
    })),
  );
  return rows.map((r) => ({ job_id: r.job_id, attempts_before: r.attempts_before, group_id: r.group_id }));
};

export type SkipReason = "not_found" | "not_dead" | "partial" | "expired";
export type RedriveOutcome = { redriven: string[]; skipped: Array<{ job_id: string; reason: SkipReason }> };

/**
 * The immediate redrive, DEAD → READY at once, audited: each redriven job moves back to the hot
 * table with a fresh attempt budget (attempt 0, redrive_count + 1), a `redriven` timeline event and
 * an audit row, all in one transaction ({@link moveDeadJobs}). Jobs that recorded effects (partial)
 * or whose deadline passed are skipped unless `force`; a forced redrive of an expired deadline
 * clears it. Redriven jobs take their tenants' next virtual finish times, as enqueued jobs do
 * (weighted fair share, docs/scheduling.md). Unthrottled, for tests and internal use: what
 * operators run (CLI, console, API) is a durable redrive at a velocity (createRedrive,
 * packages/core/src/dlq/redrive-runner.ts, docs/redrive.md). Transition `redrive` (sql/transitions.ts).
 */
export const redriveJobs = async (db: Db, params: RedriveParams): Promise<RedriveOutcome> => {
  if (!params.jobIds?.length && !params.filter) {
    throw new AppError("BAD_REQUEST", { message: "redrive needs job ids or a filter" });
  }
  const limit = Math.min(params.limit ?? 10_000, 100_000);
  return inTransaction(db, async (client) => {
    const f = params.filter ?? {};
    const { rows } = await client.query<{ job_id: string; state: string; partial: boolean; past_deadline: boolean }>(
      `SELECT job_id::text, state, partial, (deadline_at IS NOT NULL AND deadline_at <= coalesce($7::timestamptz, now())) AS past_deadline
         FROM finished_jobs
        WHERE ($1::uuid[] IS NULL OR job_id = ANY($1))
          AND ($1::uuid[] IS NOT NULL OR state = 'DEAD')
          AND ($2::text IS NULL OR queue_id = $2) AND ($3::text IS NULL OR job_type = $3)
          AND ($4::text IS NULL OR tenant_id = $4) AND ($5::text IS NULL OR error ->> 'code' = $5)
        ORDER BY finished_at
        LIMIT $6
        FOR UPDATE`,
      [params.jobIds?.length ? params.jobIds : null, f.queueId ?? null, f.jobType ?? null, f.tenantId ?? null, f.errorCode ?? null, limit, params.now ?? null],
    );
    const skipped: RedriveOutcome["skipped"] = [];
    const chosen: string[] = [];
    const seen = new Set(rows.map((r) => r.job_id));
    const unseen = (params.jobIds ?? []).filter((id) => !seen.has(id));
    if (unseen.length > 0) {
      const live = await client.query<{ job_id: string }>(`SELECT job_id::text FROM jobs WHERE job_id = ANY($1::uuid[])`, [unseen]);
      const isLive = new Set(live.rows.map((r) => r.job_id));
      for (const id of unseen) skipped.push({ job_id: id, reason: isLive.has(id) ? "not_dead" : "not_found" });
    }
    for (const r of rows) {
      if (r.state !== "DEAD") skipped.push({ job_id: r.job_id, reason: "not_dead" });
      else if (r.partial && !params.force) skipped.push({ job_id: r.job_id, reason: "partial" });
      else if (r.past_deadline && !params.force) skipped.push({ job_id: r.job_id, reason: "expired" });
      else chosen.push(r.job_id);
    }
    if (params.dryRun || chosen.length === 0) return { redriven: params.dryRun ? chosen : [], skipped };

    await moveDeadJobs(client, { jobIds: chosen, now: params.now, actor: params.actor, reason: params.reason ?? null, isForced: params.force ?? false });
    return { redriven: chosen, skipped };
  });
};
