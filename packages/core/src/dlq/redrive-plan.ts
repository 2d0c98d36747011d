import { AppError } from "@porter/contracts";
import type { Db } from "../db";

/** Why a dead job is not redriven (the dry run's and the run's skip reasons), in report order. */
export const REDRIVE_SKIP_REASONS = ["expired", "partial", "permanent", "over_quota", "already"] as const;
export type RedriveSkipReason = (typeof REDRIVE_SKIP_REASONS)[number];
export type RedriveSkipCounts = Record<RedriveSkipReason, number>;

/** The most jobs one redrive may hold (narrow the selection beyond it). */
export const MAX_REDRIVE_JOBS = 100_000;

/**
 * An ISO 8601 instant as UTC for the database: the contract accepts any offset ISO 8601 allows
 * (up to ±23:59), PostgreSQL only ±15:59, so the text never reaches it as written.
 */
const instant = (iso: string | undefined): string | null => (iso ? new Date(iso).toISOString() : null);
/** A filter over DEAD jobs; `from`/`to` bound the death time (`from` ≤ finished_at < `to`). */
export type RedriveSelectionFilter = {
  queue_id?: string | undefined;
  job_type?: string | undefined;
  tenant_id?: string | undefined;
  error_code?: string | undefined;
  from?: string | undefined;
  to?: string | undefined;
};

/**
 * What a redrive takes, as asked (and stored so in `redrives.selection`): a failure group's dead
 * jobs, a filter's, or job ids. Whatever it is, only jobs DEAD with finished_at ≤ the cutoff count.
 */
export type RedriveSelection = { group_id: string } | { filter: RedriveSelectionFilter } | { job_ids: string[] };

/** One job's verdict: `reason` null when eligible. */
export type JobEligibility = { job_id: string; reason: RedriveSkipReason | null };

/** The dry run: each job's verdict (job order), the eligible ids and the skipped counts. */
export type RedrivePlan = {
  cutoff: Date;
  jobs: JobEligibility[];
  eligible: string[];
  skipped: RedriveSkipCounts;
};

/** Zero for every skip reason. */
export const noSkips = (): RedriveSkipCounts => ({ expired: 0, partial: 0, permanent: 0, over_quota: 0, already: 0 });

/**
 * The jobs of a selection frozen at `cutoff`: DEAD rows of finished_jobs with finished_at ≤ cutoff
 * (for ids: every distinct id asked, whatever it is now — the verdict says `already` for the
 * rest). Job order (UUIDv7: creation order). A group's jobs come through the fingerprint index.
 * At most {@link MAX_REDRIVE_JOBS}, else 400: nothing is cut silently.
 */
export const selectRedriveJobs = async (db: Db, selection: RedriveSelection, cutoff: Date): Promise<string[]> => {
  let ids: string[];
  if ("job_ids" in selection) {
    ids = [...new Set(selection.job_ids)].sort();
  } else if ("group_id" in selection) {
    const group = await db.query<{ fingerprint: string }>(`SELECT fingerprint FROM dlq_groups WHERE id = $1::bigint`, [selection.group_id]);
    if (!group.rows[0]) throw new AppError("NOT_FOUND", { message: `no failure group ${selection.group_id}` });
    const { rows } = await db.query<{ job_id: string }>(
      `SELECT job_id::text FROM finished_jobs
        WHERE dlq_fingerprint = $1 AND state = 'DEAD' AND finished_at <= $2
        ORDER BY job_id LIMIT $3`,
      [group.rows[0].fingerprint, cutoff, MAX_REDRIVE_JOBS + 1],
    );
    ids = rows.map((r) => r.job_id);
  } else {
    const f = selection.filter;
    if (!Object.values(f).some((v) => v !== undefined)) {
      throw new AppError("BAD_REQUEST", { message: "a redrive filter needs at least one of queue, job type, tenant, error code, from, to" });
    }
    if (f.from && f.to && Date.parse(f.from) >= Date.parse(f.to)) {
      throw new AppError("BAD_REQUEST", { message: "the filter's `from` must be before its `to`" });
    }
    // The (queue_id, state, finished_at) index serves a queue filter; the others narrow it.
    const { rows } = await db.query<{ job_id: string }>(
      `SELECT job_id::text FROM finished_jobs
        WHERE state = 'DEAD' AND finished_at <= $1
          AND ($2::text IS NULL OR queue_id = $2) AND ($3::text IS NULL OR job_type = $3)
          AND ($4::text IS NULL OR tenant_id = $4) AND ($5::text IS NULL OR error ->> 'code' = $5)
          AND ($6::timestamptz IS NULL OR finished_at >= $6) AND ($7::timestamptz IS NULL OR finished_at < $7)
        ORDER BY job_id LIMIT $8`,
      [cutoff, f.queue_id ?? null, f.job_type ?? null, f.tenant_id ?? null, f.error_code ?? null, instant(f.from), instant(f.to), MAX_REDRIVE_JOBS + 1],
    );
    ids = rows.map((r) => r.job_id);
  }
  if (ids.length > MAX_REDRIVE_JOBS) {
    throw new AppError("BAD_REQUEST", { message: `the selection holds more than ${MAX_REDRIVE_JOBS} dead jobs: narrow it (a queue, a tenant, a time range)` });
  }
  return ids;
};

/**
 * Each job's eligibility, by the one rule (`porter_redrive_eligibility`,
 * packages/core/src/sql/routines/redrive.sql) that the dry run, the creation and the runner share.
 * `redriveId`: the redrive asking (its own pending items do not make a job `already`).
 */
export const judgeRedriveJobs = async (
  db: Db,
  jobIds: string[],
  params: { cutoff: Date; isForced: boolean; now: Date; redriveId?: string | null },
): Promise<JobEligibility[]> => {
  if (jobIds.length === 0) return [];
  const { rows } = await db.query<{ job_id: string; reason: RedriveSkipReason | null }>(
    `SELECT job_id::text, reason FROM porter_redrive_eligibility($1::uuid[], $2, $3, $4, $5::uuid) ORDER BY job_id`,
    [jobIds, params.cutoff, params.isForced, params.now, params.redriveId ?? null],
  );
  return rows;
};

/** Counts verdicts by reason. */
export const countSkips = (jobs: readonly JobEligibility[]): RedriveSkipCounts => {
  const skipped = noSkips();
  for (const j of jobs) if (j.reason) skipped[j.reason] += 1;
  return skipped;
};

/**
 * The dry run of a redrive: the selection frozen at `now` (the cutoff), each job's eligibility
 * and the counts. Reads only: it changes nothing.
 */
export const planRedrive = async (db: Db, params: { selection: RedriveSelection; force?: boolean; now?: Date }): Promise<RedrivePlan> => {
  const cutoff = params.now ?? (await dbNow(db));
  const ids = await selectRedriveJobs(db, params.selection, cutoff);
  const jobs = await judgeRedriveJobs(db, ids, { cutoff, isForced: params.force ?? false, now: cutoff });
  return { cutoff, jobs, eligible: jobs.filter((j) => j.reason === null).map((j) => j.job_id), skipped: countSkips(jobs) };
};

/** The database's clock (the cutoff and the runner's batches use one clock: the server's). */
export const dbNow = async (db: Db): Promise<Date> => (await db.query<{ now: Date }>(`SELECT clock_timestamp() AS now`)).rows[0]!.now;
