// Inputs and outputs of the dead-letter triage workflow (issue 12): failure groups, triage,
// reason codes, durable redrives, alert rules, alerts and the alert webhook. Shared with the
// console (zod only). Procedures (packages/api/src/routers/dlq/):
//
//   dlq.groups.list      viewer    ZGroupListInput → ZGroupListOutput
//   dlq.groups.get       viewer    { id } → ZGroupDetail
//   dlq.groups.jobs      viewer    ZGroupJobsInput → ZGroupJobsOutput
//   dlq.groups.triage    operator  ZGroupTriageInput → ZGroupDetail      (owner/status/reason/note, one call)
//   dlq.jobs.get         viewer    { job_id } → ZJobTriage               (a single dead job's triage; 404 if it never died)
//   dlq.jobs.triage      operator  ZJobTriageInput → ZJobTriage           (a single dead job)
//   dlq.reasonCodes.list viewer    {} → { codes: ZReasonCode[] }
//   dlq.reasonCodes.upsert admin   ZReasonCodeInput → ZReasonCode
//   dlq.redrives.preview operator  ZRedriveRequest → ZRedrivePreview      (the dry run: changes nothing)
//   dlq.redrives.create  operator  ZRedriveRequest & { rate_per_s } → ZRedrive
//   dlq.redrives.list    viewer    { status?, cursor?, limit } → { redrives: ZRedrive[], next_cursor }
//   dlq.redrives.get     viewer    { id } → ZRedrive
//   dlq.redrives.abort   operator  { id, reason? } → ZRedrive
//   dlq.alerts.list      viewer    { state?, cursor?, limit } → { alerts: ZAlert[], firing: number, next_cursor }
//   dlq.alerts.rules     viewer    {} → { rules: ZAlertRule[] }
//   dlq.alerts.saveRule  admin     ZAlertRuleInput → ZAlertRule          (create without id, update with id)
//   dlq.alerts.deleteRule admin    { id } → { id }
//   dlq.webhook.get      admin     {} → ZAlertWebhook | null             (the secret never, only its last 4)
//   dlq.webhook.set      admin     ZAlertWebhookInput → ZAlertWebhook & { secret: string } (secret shown once)
//   dlq.webhook.delete   admin     {} → { deleted: boolean }
//   jobs.errorCodes      viewer    {} → { codes: { code, count }[] }      (the codes DEAD jobs carry now)
import { ZDateTime, ZStorableText } from "@porter/contracts/storable";
import { z } from "zod";

const text = ZStorableText.trim().min(1).max(200);

/** Triage status of a failure group or a dead job. */
export const DLQ_STATUSES = ["new", "investigating", "fix_pending", "resolved", "ignored"] as const;
export const ZDlqStatus = z.enum(DLQ_STATUSES);
export type TDlqStatus = z.infer<typeof ZDlqStatus>;

/** A group's id: the bigint of `dlq_groups.id`, as a decimal string. */
export const ZGroupId = z.string().regex(/^[1-9][0-9]{0,17}$/, "a failure group id (a positive integer)");

/** An offset cursor (`next_cursor` of the previous page). */
export const ZOffsetCursor = z.string().regex(/^[0-9]{1,9}$/, "a cursor from a previous page (next_cursor)");

export const GROUP_SORTS = ["last_seen", "first_seen", "count", "dead_now", "status"] as const;

export const ZGroupListInput = z.strictObject({
  queue_id: text.optional(),
  job_type: text.optional(),
  tenant_id: text.optional(),
  error_code: text.optional(),
  status: ZDlqStatus.optional(),
  /** "me" (the caller), "none" (unowned) or a user id. */
  owner: text.optional(),
  /** Only groups with jobs still DEAD (default true). */
  dead_only: z.boolean().default(true),
  sort: z.enum(GROUP_SORTS).default("last_seen"),
  order: z.enum(["asc", "desc"]).default("desc"),
  cursor: ZOffsetCursor.optional(),
  limit: z.number().int().min(1).max(200).default(25),
});

export const ZCount = z.strictObject({ value: z.string(), count: z.number().int() });

export const ZGroupSummary = z.strictObject({
  id: z.string(),
  fingerprint: z.string(),
  job_type: z.string(),
  error_code: z.string(),
  error_class: z.string(),
  sample_message: z.string(),
  normalized_message: z.string(),
  sample_job_id: z.string(),
  count: z.number().int(),
  dead_now: z.number().int(),
  first_seen: z.string(),
  last_seen: z.string(),
  status: ZDlqStatus,
  owner: z.strictObject({ id: z.string(), email: z.string(), name: z.string() }).nullable(),
  reason_code: z.string().nullable(),
  ignored_until: z.string().nullable(),
  ignore_remaining: z.number().int().nullable(),
  is_regression: z.boolean(),
  reopened_at: z.string().nullable(),
  /** Top tenants and queues by deaths (at most 5 each). */
  tenants: z.array(z.strictObject({ tenant_id: z.string(), count: z.number().int() })),
  queues: z.array(z.strictObject({ queue_id: z.string(), count: z.number().int() })),
  /** Deaths per hour over the last 24 h, oldest first (24 numbers). */
  sparkline: z.array(z.number().int()),
});
export type TGroupSummary = z.infer<typeof ZGroupSummary>;

export const ZGroupListOutput = z.strictObject({ groups: z.array(ZGroupSummary), next_cursor: z.string().nullable(), total: z.number().int() });

export const ZDlqEvent = z.strictObject({
  id: z.string(),
  at: z.string(),
  actor: z.string(),
  kind: z.string(),
  body: z.string().nullable(),
  data: z.record(z.string(), z.unknown()).nullable(),
  job_id: z.string().nullable(),
});

export const ZGroupDetail = ZGroupSummary.extend({
  worker_versions: z.array(z.strictObject({ version: z.string(), count: z.number().int() })),
  /** The oldest job of the group still DEAD (its finished_at), or null. */
  oldest_dead_at: z.string().nullable(),
  /** The thread: notes and triage changes, oldest first. */
  events: z.array(ZDlqEvent),
});
export type TGroupDetail = z.infer<typeof ZGroupDetail>;

export const ZGroupJobsInput = z.strictObject({
  id: ZGroupId,
  /** Only the jobs still DEAD (default), or every job that died into the group (14 days). */
  dead_only: z.boolean().default(true),
  cursor: ZOffsetCursor.optional(),
  limit: z.number().int().min(1).max(200).default(25),
});
export const ZGroupJob = z.strictObject({
  job_id: z.string(),
  queue_id: z.string(),
  tenant_id: z.string(),
  state: z.string(),
  attempt: z.number().int(),
  died_at: z.string(),
  error_message: z.string(),
  partial: z.boolean(),
  deadline_at: z.string().nullable(),
  redrive_count: z.number().int(),
});
export const ZGroupJobsOutput = z.strictObject({ jobs: z.array(ZGroupJob), next_cursor: z.string().nullable() });

/** Ignored until a date, or until N more deaths arrive (one of them). */
export const ZIgnore = z.union([z.strictObject({ until: ZDateTime }), z.strictObject({ more: z.number().int().min(1).max(1_000_000) })]);

export const ZGroupTriageInput = z
  .strictObject({
    id: ZGroupId,
    /** A console user's id or e-mail; "me" for the caller; null to unassign. */
    owner: text.nullable().optional(),
    status: ZDlqStatus.optional(),
    /** Required with status "ignored". */
    ignore: ZIgnore.optional(),
    reason_code: text.nullable().optional(),
    note: ZStorableText.trim().min(1).max(5000).optional(),
  })
  .refine((t) => t.owner !== undefined || t.status || t.reason_code !== undefined || t.note, {
    message: "change something: owner, status, reason_code or note",
  })
  .refine((t) => (t.status === "ignored") === (t.ignore !== undefined), {
    message: 'status "ignored" takes ignore ({until} or {more}), and only it does',
    path: ["ignore"],
  });

export const ZJobTriageInput = z.strictObject({
  job_id: z.uuid("a job id (uuid)"),
  owner: text.nullable().optional(),
  status: ZDlqStatus.optional(),
  reason_code: text.nullable().optional(),
  note: ZStorableText.trim().min(1).max(5000).optional(),
});
export const ZJobTriage = z.strictObject({
  job_id: z.string(),
  /** The failure group it last died into, null when no death of it is kept (14 days). */
  group_id: z.string().nullable(),
  owner: z.strictObject({ id: z.string(), email: z.string(), name: z.string() }).nullable(),
  status: ZDlqStatus,
  reason_code: z.string().nullable(),
  events: z.array(ZDlqEvent),
});
export type TJobTriage = z.infer<typeof ZJobTriage>;

export const ZReasonCode = z.strictObject({ code: z.string(), label: z.string(), description: z.string(), archived: z.boolean() });
export const ZReasonCodeInput = z.strictObject({
  code: z.string().regex(/^[a-z][a-z0-9_]{0,39}$/, "lower-case letters, digits and _ (at most 40), starting with a letter"),
  label: text,
  description: ZStorableText.trim().max(500).default(""),
  archived: z.boolean().default(false),
});

// ---- Redrive -------------------------------------------------------------------------------------

/** Why a dead job is not redriven (the dry run's and the run's skip reasons). */
export const SKIP_REASONS = ["expired", "partial", "permanent", "over_quota", "already"] as const;
export type TSkipReason = (typeof SKIP_REASONS)[number];

export const ZRedriveFilter = z.strictObject({
  queue_id: text.optional(),
  job_type: text.optional(),
  tenant_id: text.optional(),
  error_code: text.optional(),
  /** Died at or after (ISO 8601). */
  from: ZDateTime.optional(),
  /** Died before. */
  to: ZDateTime.optional(),
});

export const ZRedriveSelection = z.union([
  z.strictObject({ group_id: ZGroupId }),
  z.strictObject({ filter: ZRedriveFilter }),
  z.strictObject({ job_ids: z.array(z.uuid()).min(1, "select at least one job").max(10_000) }),
]);

export const ZRedriveRequest = z.strictObject({
  selection: ZRedriveSelection,
  /** Also redrive permanent errors, partially completed jobs and past-deadline jobs (deadline cleared). */
  force: z.boolean().default(false),
  reason: ZStorableText.trim().max(500).optional(),
});
export const DEFAULT_REDRIVE_RATE = 50;
export const ZRedriveCreate = ZRedriveRequest.extend({
  /** Jobs per second (default 50, like SQS's redrive). */
  rate_per_s: z.number().min(0.1).max(10_000).default(DEFAULT_REDRIVE_RATE),
});

export const ZSkipCounts = z.strictObject({
  expired: z.number().int(),
  partial: z.number().int(),
  permanent: z.number().int(),
  over_quota: z.number().int(),
  already: z.number().int(),
});

export const ZRedrivePreview = z.strictObject({
  eligible: z.number().int(),
  skipped: ZSkipCounts,
  /** The eligible jobs' ids (at most 1000 listed). */
  job_ids: z.array(z.string()),
  /** Per job (at most 1000 listed): eligible, or why not. */
  jobs: z.array(z.strictObject({ job_id: z.string(), eligible: z.boolean(), reason: z.enum(SKIP_REASONS).nullable() })),
  cutoff: z.string(),
});

export const REDRIVE_STATUSES = ["running", "completed", "aborted"] as const;
export const ZRedrive = z.strictObject({
  redrive_id: z.string(),
  status: z.enum(REDRIVE_STATUSES),
  actor: z.string(),
  reason: z.string().nullable(),
  selection: z.record(z.string(), z.unknown()),
  force: z.boolean(),
  rate_per_s: z.number(),
  created_at: z.string(),
  cutoff: z.string(),
  total: z.number().int(),
  redriven: z.number().int(),
  skipped: ZSkipCounts,
  /** (redriven + skipped) / total, 0…1. */
  progress: z.number(),
  /** Seconds left at the current rate, null when finished. */
  eta_s: z.number().nullable(),
  finished_at: z.string().nullable(),
  aborted_by: z.string().nullable(),
});
export type TRedrive = z.infer<typeof ZRedrive>;

export const ZRedriveId = z.strictObject({ id: z.uuid("a redrive id (uuid)") });
export const ZRedriveListInput = z.strictObject({
  status: z.enum(REDRIVE_STATUSES).optional(),
  cursor: ZOffsetCursor.optional(),
  limit: z.number().int().min(1).max(200).default(25),
});
export const ZRedriveListOutput = z.strictObject({ redrives: z.array(ZRedrive), next_cursor: z.string().nullable() });
export const ZRedriveAbort = z.strictObject({ id: z.uuid("a redrive id (uuid)"), reason: ZStorableText.trim().max(500).optional() });

// ---- Alerts --------------------------------------------------------------------------------------

export const ALERT_KINDS = ["deaths_5m", "unowned_age", "group_reopened"] as const;
export const ZAlertRule = z.strictObject({
  id: z.string(),
  queue_id: z.string().nullable(),
  kind: z.enum(ALERT_KINDS),
  /** deaths_5m: deaths in 5 min above this; unowned_age: seconds; group_reopened: window in seconds. */
  threshold: z.number(),
  enabled: z.boolean(),
});
export const ZAlertRuleInput = z.strictObject({
  id: ZGroupId.optional(),
  queue_id: text.nullable().default(null),
  kind: z.enum(ALERT_KINDS),
  threshold: z.number().min(0).max(1e9),
  enabled: z.boolean().default(true),
});
export const ZAlert = z.strictObject({
  id: z.string(),
  rule_id: z.string(),
  kind: z.enum(ALERT_KINDS),
  queue_id: z.string().nullable(),
  subject: z.string(),
  state: z.enum(["firing", "resolved"]),
  value: z.number(),
  message: z.string(),
  fired_at: z.string(),
  resolved_at: z.string().nullable(),
});
export const ZAlertWebhookInput = z.strictObject({
  url: z.url({ protocol: /^https$/, error: "an https:// URL" }).max(2000),
  /** The tenant the webhook.deliver jobs run under. */
  tenant_id: text,
  enabled: z.boolean().default(true),
  /** Make a new signing secret (the old one stops working). */
  rotate_secret: z.boolean().default(false),
});
export const ZAlertWebhook = z.strictObject({
  id: z.string(),
  url: z.string(),
  tenant_id: z.string(),
  enabled: z.boolean(),
  secret_hint: z.string(),
  updated_at: z.string(),
});

/** dlq.alerts.list's input (added by the alerts branch; the shape the header names). */
export const ZAlertListInput = z.strictObject({
  state: z.enum(["firing", "resolved"]).optional(),
  cursor: ZOffsetCursor.optional(),
  limit: z.number().int().min(1).max(200).default(50),
});
export const ZAlertListOutput = z.strictObject({
  alerts: z.array(ZAlert),
  /** Alerts firing now, whatever the page (the console's banner). */
  firing: z.number().int(),
  next_cursor: z.string().nullable(),
});
/**
 * dlq.webhook.set's output: the endpoint and its signing secret (`whsec_…`) when it is new —
 * created, or rotated with `rotate_secret` — the only time it is shown; "" when it was kept.
 */
export const ZAlertWebhookSet = ZAlertWebhook.extend({ secret: z.string() });
