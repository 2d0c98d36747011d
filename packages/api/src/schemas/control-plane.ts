// Inputs of the control-plane procedures. Shared by the server (tRPC `.input()`) and the
// console's forms, which validate with these same schemas before sending and show field errors.
// Only zod here (and the contracts' zod helpers): the console's client bundle imports this file.
// Every string that reaches PostgreSQL starts from ZStorableText (no NUL, no lone surrogate).
import { ZStorableText } from "@porter/contracts/storable";
import { z } from "zod";

/** Ids of pools, queues, job types, tenants and resource keys: `email.transactional`, `tenant_A`. */
export const ZConfigId = ZStorableText
  .trim()
  .min(1, "required")
  .max(100, "at most 100 characters")
  .regex(/^[A-Za-z0-9][A-Za-z0-9._:-]*$/, "letters, digits and . _ : - only, starting with a letter or digit");

const int = (min: number, max: number) => z.number({ error: "a whole number" }).int("a whole number").min(min, `at least ${min}`).max(max, `at most ${max}`);
const positiveRate = z.number({ error: "a number" }).gt(0, "more than 0").max(1_000_000, "at most 1000000");
const description = ZStorableText.trim().max(500, "at most 500 characters");
const DAY_S = 86_400;

/** An optional note kept in the audit log with the change. */
export const ZReason = ZStorableText.trim().max(500, "at most 500 characters").optional();

type Issue = { path: string[]; message: string };
const refineWith = (check: (v: Record<string, unknown>) => Issue[]) => (value: Record<string, unknown>, ctx: z.RefinementCtx) => {
  for (const issue of check(value)) ctx.addIssue({ code: "custom", path: issue.path, message: issue.message });
};
const notAbove = (v: Record<string, unknown>, low: string, high: string, message: string): Issue[] =>
  typeof v[low] === "number" && typeof v[high] === "number" && (v[low] as number) > (v[high] as number) ? [{ path: [low], message }] : [];

// ---- pools ---------------------------------------------------------------------------------------
export const ZPoolFields = z.strictObject({
  description: description.default(""),
  concurrency_cap: int(1, 100_000).nullable().default(null),
  worker_concurrency: int(1, 10_000).default(10),
});
export const ZPoolCreate = ZPoolFields.extend({ id: ZConfigId, reason: ZReason });
export const ZPoolUpdate = z.strictObject({ id: ZConfigId, patch: ZPoolFields.partial(), reason: ZReason });

// ---- resource keys -------------------------------------------------------------------------------
export const ZResourceKeyFields = z.strictObject({
  description: description.default(""),
  concurrency_limit: int(1, 100_000).nullable().default(null),
  rate_per_second: positiveRate.nullable().default(null),
  burst: int(1, 1_000_000).nullable().default(null),
});
export const ZResourceKeyCreate = ZResourceKeyFields.extend({ id: ZConfigId, reason: ZReason });
export const ZResourceKeyUpdate = z.strictObject({ id: ZConfigId, patch: ZResourceKeyFields.partial(), reason: ZReason });

// ---- queues --------------------------------------------------------------------------------------
const queueShape = {
  pool_id: ZConfigId,
  description: description.default(""),
  default_priority: int(0, 100).default(50),
  max_priority: int(0, 100).default(100),
  concurrency_cap: int(1, 100_000).nullable().default(null),
  lease_seconds: int(1, DAY_S).default(30),
  default_max_attempts: int(1, 1000).default(5),
  max_attempts: int(1, 1000).default(25),
  backoff_base_ms: int(0, DAY_S * 1000).default(1000),
  backoff_cap_ms: int(0, 7 * DAY_S * 1000).default(300_000),
  default_timeout_s: int(1, 7 * DAY_S).default(300),
  max_timeout_s: int(1, 7 * DAY_S).default(3600),
  default_deadline_s: int(1, 365 * DAY_S).nullable().default(null),
  max_runtime_s: int(1, 7 * DAY_S).default(3600),
  retention_s: int(0, 365 * DAY_S).default(7 * DAY_S),
  aging_s: int(1, 30 * DAY_S).nullable().default(null),
  resource_key_id: ZConfigId.nullable().default(null),
  admission: z.enum(["reject", "defer"], { error: "reject or defer" }).default("reject"),
};

/** Cross-field rules of a queue (checked on create, and on the merged row of an update). */
export const queueIssues = (v: Record<string, unknown>): Issue[] => [
  ...notAbove(v, "default_priority", "max_priority", "must not exceed the max priority"),
  ...notAbove(v, "default_max_attempts", "max_attempts", "must not exceed the retry ceiling (max attempts)"),
  ...notAbove(v, "backoff_base_ms", "backoff_cap_ms", "must not exceed the backoff cap"),
  ...notAbove(v, "default_timeout_s", "max_timeout_s", "must not exceed the max timeout"),
];
export const ZQueueFields = z.strictObject(queueShape).superRefine(refineWith(queueIssues));
export const ZQueueCreate = z.strictObject({ id: ZConfigId, ...queueShape, reason: ZReason }).superRefine(refineWith(queueIssues));
export const ZQueueUpdate = z.strictObject({ id: ZConfigId, patch: z.strictObject(queueShape).partial(), reason: ZReason });

// ---- job types -----------------------------------------------------------------------------------
export const ZJobTypeFields = z.strictObject({
  queue_id: ZConfigId,
  description: description.default(""),
  payload_schema_version: ZStorableText.trim().min(1, "required").max(40, "at most 40 characters").default("1"),
  timeout_s: int(1, 7 * DAY_S).nullable().default(null),
});
export const ZJobTypeCreate = ZJobTypeFields.extend({ id: ZConfigId, reason: ZReason });
export const ZJobTypeUpdate = z.strictObject({ id: ZConfigId, patch: ZJobTypeFields.partial(), reason: ZReason });

// ---- tenants -------------------------------------------------------------------------------------
const origin = ZStorableText
  .trim()
  .regex(/^https?:\/\/[^/\s]+$/, "an origin such as https://app.example.com (no path)");
export const ZTenantFields = z.strictObject({
  name: ZStorableText.trim().max(200, "at most 200 characters").default(""),
  weight: int(1, 1000).default(1),
  max_running: int(1, 100_000).nullable().default(null),
  start_rate_per_second: positiveRate.nullable().default(null),
  rate_per_second: positiveRate.nullable().default(null),
  backlog_cap: int(0, 100_000_000).nullable().default(null),
  max_priority: int(0, 100).nullable().default(null),
  max_attempts: int(1, 1000).nullable().default(null),
  status_origins: z.array(origin).max(20, "at most 20 origins").default([]),
});
export const ZTenantCreate = ZTenantFields.extend({ id: ZConfigId, reason: ZReason });
export const ZTenantUpdate = z.strictObject({ id: ZConfigId, patch: ZTenantFields.partial(), reason: ZReason });

// ---- users and API keys --------------------------------------------------------------------------
export const ZRole = z.enum(["viewer", "operator", "admin"]);
/** A console password: long enough to resist guessing; argon2id does the rest. */
export const ZPassword = z.string().min(12, "at least 12 characters").max(200, "at most 200 characters");
export const ZUserCreate = z.strictObject({
  email: z.email("an email address").trim().toLowerCase().max(200),
  name: ZStorableText.trim().max(200, "at most 200 characters").default(""),
  role: ZRole,
  password: ZPassword,
});
export const ZUserUpdate = z.strictObject({
  id: ZStorableText.min(1).max(100),
  name: ZStorableText.trim().max(200, "at most 200 characters").optional(),
  role: ZRole.optional(),
  disabled: z.boolean().optional(),
  password: ZPassword.optional(),
  reason: ZReason,
});

export const ZApiKeyCreate = z.strictObject({
  name: ZStorableText.trim().max(200, "at most 200 characters").default(""),
  tenant_ids: z.array(ZConfigId).min(1, "pick at least one tenant").max(100),
  /** ["*"] for every job type. */
  job_types: z
    .array(z.union([z.literal("*"), ZConfigId]))
    .min(1, "pick job types, or * for all")
    .max(200)
    .refine((types) => !types.includes("*") || types.length === 1, "either * or a list of job types, not both"),
});
export const ZApiKeyRevoke = z.strictObject({ id: ZStorableText.min(1).max(40), reason: ZReason });
