import { AppError } from "@porter/contracts";
import type { Db } from "../db";

/** Triage statuses of a failure group or a dead job, in workflow order. */
export const DLQ_STATUS_NAMES = ["new", "investigating", "fix_pending", "resolved", "ignored"] as const;
/** Triage status of a failure group or a dead job. */
export type DlqStatus = (typeof DLQ_STATUS_NAMES)[number];
/** A console user as a group's owner. */
export type DlqOwner = { id: string; email: string; name: string };

/** One failure group as the Dead letters list shows it (the API's ZGroupSummary). */
export type DlqGroupSummary = {
  id: string;
  fingerprint: string;
  job_type: string;
  error_code: string;
  error_class: string;
  sample_message: string;
  normalized_message: string;
  sample_job_id: string;
  count: number;
  dead_now: number;
  first_seen: string;
  last_seen: string;
  status: DlqStatus;
  owner: DlqOwner | null;
  reason_code: string | null;
  ignored_until: string | null;
  ignore_remaining: number | null;
  is_regression: boolean;
  reopened_at: string | null;
  tenants: Array<{ tenant_id: string; count: number }>;
  queues: Array<{ queue_id: string; count: number }>;
  /** Deaths per hour over the last 24 h, oldest first (24 numbers, the current hour last). */
  sparkline: number[];
};

/** One entry of a group's (or a dead job's) thread. */
export type DlqEventView = {
  id: string;
  at: string;
  actor: string;
  kind: string;
  body: string | null;
  data: Record<string, unknown> | null;
  job_id: string | null;
};

/** A group with its worker versions, oldest dead job and thread (the API's ZGroupDetail). */
export type DlqGroupDetail = DlqGroupSummary & {
  worker_versions: Array<{ version: string; count: number }>;
  oldest_dead_at: string | null;
  events: DlqEventView[];
};

/** Filters, sort and page of {@link listDlqGroups}; every filter narrows (AND). */
export type DlqGroupQuery = {
  queueId?: string;
  jobType?: string;
  tenantId?: string;
  errorCode?: string;
  status?: DlqStatus;
  /** "me" (with `callerUserId`), "none" (unowned), a user id or an e-mail. */
  owner?: string;
  callerUserId?: string | null;
  /** Only groups with jobs still DEAD (default true). */
  isDeadOnly?: boolean;
  sort?: "last_seen" | "first_seen" | "count" | "dead_now" | "status";
  order?: "asc" | "desc";
  offset?: number;
  limit?: number;
};

const iso = (d: Date | null): string | null => (d ? d.toISOString() : null);

/** A failure group's id as the API takes it (a positive bigint in decimal); anything else is a 400. */
export const checkGroupId = (id: string): string => {
  if (!/^[1-9][0-9]{0,17}$/.test(id)) throw new AppError("BAD_REQUEST", { message: `not a failure group id: ${JSON.stringify(id.slice(0, 40))}` });
  return id;
};

// The summary's columns: the group row, its owner, the top 5 tenants and queues (facets' primary
// key range of the group, at most a few hundred rows) and the 24 h sparkline (at most 24 rows of
// dlq_group_hours' primary key range). Nothing here reads a job table.
const SUMMARY_SELECT = `
  SELECT g.id::text, g.fingerprint, g.job_type, g.error_code, g.error_class, g.sample_message, g.normalized_message,
         g.sample_job_id::text, g.count::float8 AS count, g.dead_now::float8 AS dead_now, g.first_seen, g.last_seen,
         g.status::text, g.reason_code, g.ignored_until, g.ignore_remaining, g.is_regression, g.reopened_at,
         u.id AS owner_id, u.email AS owner_email, u.name AS owner_name,
         (SELECT coalesce(json_agg(json_build_object('tenant_id', t.value, 'count', t.count) ORDER BY t.count DESC, t.value), '[]')
            FROM (SELECT value, count FROM dlq_group_facets f WHERE f.group_id = g.id AND f.kind = 'tenant'
                   ORDER BY count DESC, value LIMIT 5) t) AS tenants,
         (SELECT coalesce(json_agg(json_build_object('queue_id', q.value, 'count', q.count) ORDER BY q.count DESC, q.value), '[]')
            FROM (SELECT value, count FROM dlq_group_facets f WHERE f.group_id = g.id AND f.kind = 'queue'
                   ORDER BY count DESC, value LIMIT 5) q) AS queues,
         (SELECT array_agg(coalesce(h.deaths, 0) ORDER BY s.hour)
            FROM generate_series(date_trunc('hour', $1::timestamptz) - interval '23 hours', date_trunc('hour', $1::timestamptz), interval '1 hour') AS s(hour)
            LEFT JOIN dlq_group_hours h ON h.group_id = g.id AND h.hour = s.hour) AS sparkline
    FROM dlq_groups g LEFT JOIN users u ON u.id = g.owner_id`;

type SummaryRow = Omit<DlqGroupSummary, "first_seen" | "last_seen" | "ignored_until" | "reopened_at" | "owner"> & {
  first_seen: Date;
  last_seen: Date;
  ignored_until: Date | null;
  reopened_at: Date | null;
  owner_id: string | null;
  owner_email: string | null;
  owner_name: string | null;
};

const toSummary = (r: SummaryRow): DlqGroupSummary => ({
  id: r.id,
  fingerprint: r.fingerprint,
  job_type: r.job_type,
  error_code: r.error_code,
  error_class: r.error_class,
  sample_message: r.sample_message,
  normalized_message: r.normalized_message,
  sample_job_id: r.sample_job_id,
  count: Number(r.count),
  dead_now: Number(r.dead_now),
  first_seen: r.first_seen.toISOString(),
  last_seen: r.last_seen.toISOString(),
  status: r.status,
  owner: r.owner_id ? { id: r.owner_id, email: r.owner_email ?? "", name: r.owner_name ?? "" } : null,
  reason_code: r.reason_code,
  ignored_until: iso(r.ignored_until),
  ignore_remaining: r.ignore_remaining,
  is_regression: r.is_regression,
  reopened_at: iso(r.reopened_at),
  tenants: r.tenants.map((t) => ({ tenant_id: t.tenant_id, count: Number(t.count) })),
  queues: r.queues.map((q) => ({ queue_id: q.queue_id, count: Number(q.count) })),
  sparkline: (r.sparkline ?? []).map(Number),
});

const SORT_COLUMNS: Record<NonNullable<DlqGroupQuery["sort"]>, string> = {
  last_seen: "g.last_seen",
  first_seen: "g.first_seen",
  count: "g.count",
  dead_now: "g.dead_now",
  status: "g.status",
};

/**
 * A page of failure groups (offset pagination: the list is small — one row per distinct bug —
 * and sorted by counters that move, so keyset cursors would skip or repeat rows anyway). The
 * filters are on dlq_groups and, for queue and tenant, an EXISTS on the group's facets; `total`
 * counts matching groups, never jobs.
 */
export const listDlqGroups = async (
  db: Db,
  query: DlqGroupQuery = {},
  now: Date = new Date(),
): Promise<{ groups: DlqGroupSummary[]; next_cursor: string | null; total: number }> => {
  const params: unknown[] = [now];
  const add = (v: unknown) => {
    params.push(v);
    return `$${params.length}`;
  };
  const conds: string[] = [];
  if (query.isDeadOnly ?? true) conds.push("g.dead_now > 0");
  if (query.jobType) conds.push(`g.job_type = ${add(query.jobType)}`);
  if (query.errorCode) conds.push(`g.error_code = ${add(query.errorCode)}`);
  if (query.status) conds.push(`g.status = ${add(query.status)}::dlq_status`);
  if (query.queueId) conds.push(`EXISTS (SELECT 1 FROM dlq_group_facets f WHERE f.group_id = g.id AND f.kind = 'queue' AND f.value = ${add(query.queueId)})`);
  if (query.tenantId)
    conds.push(`EXISTS (SELECT 1 FROM dlq_group_facets f WHERE f.group_id = g.id AND f.kind = 'tenant' AND f.value = ${add(query.tenantId)})`);
  if (query.owner !== undefined) {
    if (query.owner === "none") conds.push("g.owner_id IS NULL");
    else if (query.owner === "me") {
      if (!query.callerUserId) throw new AppError("BAD_REQUEST", { message: 'owner "me" needs a signed-in user' });
      conds.push(`g.owner_id = ${add(query.callerUserId)}`);
    } else {
      const o = add(query.owner);
      conds.push(`(g.owner_id = ${o} OR g.owner_id = (SELECT id FROM users WHERE lower(email) = lower(${o})))`);
    }
  }
  const where = conds.length ? `WHERE ${conds.join(" AND ")}` : "";
  const limit = Math.min(Math.max(query.limit ?? 25, 1), 200);
  const offset = Math.max(query.offset ?? 0, 0);
  const dir = query.order === "asc" ? "ASC" : "DESC";
  const sort = SORT_COLUMNS[query.sort ?? "last_seen"];
  const countParams = [...params];
  const [page, total] = await Promise.all([
    db.query<SummaryRow>(`${SUMMARY_SELECT} ${where} ORDER BY ${sort} ${dir}, g.id ${dir} LIMIT ${add(limit + 1)} OFFSET ${add(offset)}`, params),
    // $1 (the clock) is only the sparkline's; named here so both statements take the same parameters.
    db.query<{ n: number }>(`SELECT count(*)::int AS n, $1::timestamptz AS at FROM dlq_groups g ${where}`, countParams),
  ]);
  const rows = page.rows.slice(0, limit).map(toSummary);
  return { groups: rows, next_cursor: page.rows.length > limit ? String(offset + limit) : null, total: total.rows[0]!.n };
};

type EventRowDb = { id: string; at: Date; actor: string; kind: string; body: string | null; data: Record<string, unknown> | null; job_id: string | null };
const toEvent = (e: EventRowDb): DlqEventView => ({ ...e, at: e.at.toISOString() });

/**
 * One failure group with its worker versions, the oldest job still DEAD (the first entry of the
 * group's range of finished_jobs_dlq_fingerprint_idx) and its thread, oldest first; null when unknown.
 */
export const getDlqGroup = async (db: Db, id: string, now: Date = new Date()): Promise<DlqGroupDetail | null> => {
  const { rows } = await db.query<SummaryRow>(`${SUMMARY_SELECT} WHERE g.id = $2::bigint`, [now, checkGroupId(id)]);
  if (!rows[0]) return null;
  const summary = toSummary(rows[0]);
  const [versions, oldest, events] = await Promise.all([
    db.query<{ version: string; count: number }>(
      `SELECT value AS version, count::float8 AS count FROM dlq_group_facets WHERE group_id = $1::bigint AND kind = 'worker_version' ORDER BY count DESC, value`,
      [id],
    ),
    db.query<{ at: Date }>(`SELECT finished_at AS at FROM finished_jobs WHERE dlq_fingerprint = $1 AND state = 'DEAD' ORDER BY finished_at LIMIT 1`, [
      summary.fingerprint,
    ]),
    db.query<EventRowDb>(`SELECT id::text, at, actor, kind, body, data, job_id::text FROM dlq_events WHERE group_id = $1::bigint ORDER BY id LIMIT 1000`, [id]),
  ]);
  return {
    ...summary,
    worker_versions: versions.rows.map((v) => ({ version: v.version, count: Number(v.count) })),
    oldest_dead_at: iso(oldest.rows[0]?.at ?? null),
    events: events.rows.map(toEvent),
  };
};

/** A job of a group: where it is now, and how it died. */
export type DlqGroupJob = {
  job_id: string;
  queue_id: string;
  tenant_id: string;
  state: string;
  attempt: number;
  died_at: string;
  error_message: string;
  partial: boolean;
  deadline_at: string | null;
  redrive_count: number;
};

/**
 * A page of a group's jobs, newest death first. `isDeadOnly` (default): the jobs still DEAD, read
 * along finished_jobs_dlq_fingerprint_idx (the group's own range). Otherwise every death of the
 * last 14 days (dlq_deaths by group, its index), with where each job is now: DEAD again, back in
 * the hot table after a redrive, finished otherwise, or `pruned`. 404 for an unknown group.
 */
export const listDlqGroupJobs = async (
  db: Db,
  params: { id: string; isDeadOnly?: boolean; offset?: number; limit?: number },
): Promise<{ jobs: DlqGroupJob[]; next_cursor: string | null }> => {
  const limit = Math.min(Math.max(params.limit ?? 25, 1), 200);
  const offset = Math.max(params.offset ?? 0, 0);
  const group = await db.query<{ fingerprint: string }>(`SELECT fingerprint FROM dlq_groups WHERE id = $1::bigint`, [checkGroupId(params.id)]);
  if (!group.rows[0]) throw new AppError("NOT_FOUND", { message: `failure group ${params.id} not found` });
  type Row = Omit<DlqGroupJob, "died_at" | "deadline_at"> & { died_at: Date; deadline_at: Date | null };
  const { rows } =
    (params.isDeadOnly ?? true)
      ? await db.query<Row>(
          `SELECT job_id::text, queue_id, tenant_id, state::text, attempt, finished_at AS died_at,
                  coalesce(error ->> 'message', '') AS error_message, partial, deadline_at, redrive_count
             FROM finished_jobs WHERE dlq_fingerprint = $1 AND state = 'DEAD'
            ORDER BY finished_at DESC, job_id DESC LIMIT $2 OFFSET $3`,
          [group.rows[0].fingerprint, limit + 1, offset],
        )
      : await db.query<Row>(
          `SELECT d.job_id::text, d.queue_id, d.tenant_id,
                  coalesce(f.state::text, j.state::text, 'pruned') AS state, coalesce(f.attempt, j.attempt, 0) AS attempt, d.died_at,
                  coalesce(f.error ->> 'message', j.last_error ->> 'message', '') AS error_message,
                  coalesce(f.partial, false) AS partial, coalesce(f.deadline_at, j.deadline_at) AS deadline_at,
                  coalesce(f.redrive_count, j.redrive_count, 0) AS redrive_count
             FROM dlq_deaths d
             LEFT JOIN finished_jobs f ON f.job_id = d.job_id
             LEFT JOIN jobs j ON j.job_id = d.job_id
            WHERE d.group_id = $1::bigint
            ORDER BY d.died_at DESC, d.id DESC LIMIT $2 OFFSET $3`,
          [params.id, limit + 1, offset],
        );
  return {
    jobs: rows.slice(0, limit).map((r) => ({ ...r, died_at: r.died_at.toISOString(), deadline_at: iso(r.deadline_at) })),
    next_cursor: rows.length > limit ? String(offset + limit) : null,
  };
};

/**
 * The error codes DEAD jobs carry now, with how many: summed over the failure groups' `dead_now`
 * (one row per group, maintained by the triggers) instead of counting finished_jobs.
 */
export const dlqErrorCodes = async (db: Db): Promise<Array<{ code: string; count: number }>> => {
  const { rows } = await db.query<{ code: string; count: number }>(
    `SELECT error_code AS code, sum(dead_now)::float8 AS count FROM dlq_groups WHERE dead_now > 0 GROUP BY error_code ORDER BY count DESC, code`,
  );
  return rows.map((r) => ({ code: r.code, count: Number(r.count) }));
};
