import type { Db } from "../db";

/** A rule kind (alert_rules.kind). */
export type AlertKind = "deaths_5m" | "unowned_age" | "group_reopened";

/** A rule whose condition holds now, for one subject: what its alert shows. */
export type AlertCondition = {
  ruleId: string;
  kind: AlertKind;
  queueId: string | null;
  threshold: number;
  /** The queue id (`*` for a global rule), or the failure group's id (group_reopened). */
  subject: string;
  value: number;
  message: string;
};

/** The subject of a queue-scoped rule without a queue: every queue. */
export const GLOBAL_SUBJECT = "*";

type Row = {
  rule_id: string;
  kind: AlertKind;
  queue_id: string | null;
  threshold: number;
  subject: string;
  value: number;
  groups: number;
  job_type: string | null;
  error_code: string | null;
};

/**
 * The enabled rules whose condition holds at `now`, one row per (rule, subject), in one read:
 *
 * - `deaths_5m`: deaths in (now − 5 min, now] from `dlq_deaths` (a range of its `died_at` index),
 *   of the rule's queue or all; fires above the threshold. Subject: the queue (or `*`).
 * - `unowned_age`: failure groups without an owner that still hold dead jobs and are not resolved
 *   or ignored (those are triaged); for each, its oldest job still DEAD is one probe of the
 *   `(dlq_fingerprint, finished_at)` index (per-queue rules first keep the groups whose queue facet
 *   names the queue, so the probe rarely walks). Fires when the oldest is older than the threshold
 *   (seconds). Value: that age; subject: the queue (or `*`).
 * - `group_reopened`: groups flagged as a regression whose `reopened_at` is within the last
 *   threshold seconds (of the rule's queue, by facet). One alert per group: the subject is its id.
 */
export const readAlertConditions = async (db: Db, now: Date): Promise<AlertCondition[]> => {
  const { rows } = await db.query<Row>(
    `WITH rules AS (
       SELECT id, queue_id, kind, threshold FROM alert_rules WHERE enabled
     ), deaths AS (
       SELECT r.id AS rule_id, r.kind, r.queue_id, r.threshold, coalesce(r.queue_id, '${GLOBAL_SUBJECT}') AS subject,
              count(d.id)::float8 AS value, 0 AS groups, NULL::text AS job_type, NULL::text AS error_code
         FROM rules r
         LEFT JOIN dlq_deaths d ON d.died_at > $1::timestamptz - interval '5 minutes' AND d.died_at <= $1::timestamptz
                                AND (r.queue_id IS NULL OR d.queue_id = r.queue_id)
        WHERE r.kind = 'deaths_5m'
        GROUP BY r.id, r.kind, r.queue_id, r.threshold
       HAVING count(d.id) > r.threshold
     ), unowned AS (
       SELECT r.id AS rule_id, r.kind, r.queue_id, r.threshold, coalesce(r.queue_id, '${GLOBAL_SUBJECT}') AS subject,
              extract(epoch FROM $1::timestamptz - min(o.oldest))::float8 AS value, count(*)::int AS groups,
              NULL::text AS job_type, NULL::text AS error_code
         FROM rules r
         JOIN dlq_groups g ON g.owner_id IS NULL AND g.dead_now > 0 AND g.status NOT IN ('resolved', 'ignored')
                          AND (r.queue_id IS NULL OR EXISTS (
                                SELECT 1 FROM dlq_group_facets f WHERE f.group_id = g.id AND f.kind = 'queue' AND f.value = r.queue_id))
         CROSS JOIN LATERAL (
           SELECT fj.finished_at AS oldest FROM finished_jobs fj
            WHERE fj.dlq_fingerprint = g.fingerprint AND fj.state = 'DEAD' AND (r.queue_id IS NULL OR fj.queue_id = r.queue_id)
            ORDER BY fj.finished_at LIMIT 1
         ) o
        WHERE r.kind = 'unowned_age' AND o.oldest <= $1::timestamptz - make_interval(secs => r.threshold)
        GROUP BY r.id, r.kind, r.queue_id, r.threshold
     ), reopened AS (
       SELECT r.id AS rule_id, r.kind, r.queue_id, r.threshold, g.id::text AS subject,
              greatest(0, extract(epoch FROM $1::timestamptz - g.reopened_at))::float8 AS value, 1 AS groups,
              g.job_type, g.error_code
         FROM rules r
         JOIN dlq_groups g ON g.is_regression AND g.reopened_at > $1::timestamptz - make_interval(secs => r.threshold)
                          AND (r.queue_id IS NULL OR EXISTS (
                                SELECT 1 FROM dlq_group_facets f WHERE f.group_id = g.id AND f.kind = 'queue' AND f.value = r.queue_id))
        WHERE r.kind = 'group_reopened'
     )
     SELECT rule_id::text, kind, queue_id, threshold, subject, value, groups, job_type, error_code FROM deaths
     UNION ALL SELECT rule_id::text, kind, queue_id, threshold, subject, value, groups, job_type, error_code FROM unowned
     UNION ALL SELECT rule_id::text, kind, queue_id, threshold, subject, value, groups, job_type, error_code FROM reopened
     ORDER BY 1, 5`,
    [now],
  );
  return rows.map((r) => ({
    ruleId: r.rule_id,
    kind: r.kind,
    queueId: r.queue_id,
    threshold: r.threshold,
    subject: r.subject,
    value: Math.round(r.value),
    message: messageOf(r),
  }));
};

const scopeOf = (queueId: string | null) => (queueId ? `queue ${queueId}` : "all queues");

/** The alert's one-line message: what is wrong, where, against which threshold. */
const messageOf = (r: Row): string => {
  const value = Math.round(r.value);
  switch (r.kind) {
    case "deaths_5m":
      return `${value} job(s) died in the last 5 minutes in ${scopeOf(r.queue_id)} (more than ${r.threshold})`;
    case "unowned_age":
      return `${r.groups} unowned failure group(s) in ${scopeOf(r.queue_id)} hold dead jobs older than ${r.threshold} s (the oldest died ${value} s ago)`;
    case "group_reopened":
      return `failure group ${r.subject} (${r.job_type} ${r.error_code}) reopened as a regression ${value} s ago`;
  }
};
