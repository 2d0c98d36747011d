// The control-plane model, declared once: every field of pools, resource keys, queues, job types
// and tenants (and the editable fields of users and API keys) with its kind, bounds, default,
// nullability, label, help and unit, and each entity's cross-field rules. Everything else derives
// from it: the API's input and output schemas (packages/api/src/schemas/control-plane.ts), core's
// writable columns (packages/core/src/control-plane/config.ts) and the console's forms
// (apps/console/src/components/config-form.tsx). The database's column DEFAULTs are the schema's
// own; packages/core/src/control-plane/model.int.test.ts fails when they and this file disagree.
// Only zod and plain data here: the console's client bundle imports this file.
import { z } from "zod";
import { ZStorableText } from "./storable";

type Common = {
  label: string;
  help?: string;
  placeholder?: string;
  /** Shown after the input (s, ms, jobs/s). */
  unit?: string;
  /** Why a column exists that nothing reads yet (shown nowhere; kept true by review). */
  reserved?: string;
};
/** A whole number in [min, max]; `default` is the column default (null: none, or the field is required). */
export type IntField = Common & { kind: "int"; min: number; max: number; default: number | null; isNullable?: boolean };
/** A positive rate: more than 0, at most `max`. */
export type RateField = Common & { kind: "rate"; max: number; default: null; isNullable: true };
/** Free text (`textarea`: several lines), trimmed, at most `maxLength` characters. */
export type TextField = Common & { kind: "text" | "textarea"; maxLength: number; isRequired?: boolean; default: string };
/** One of `options`. */
export type EnumField = Common & { kind: "enum"; options: readonly { value: string; label: string }[]; default: string | null };
/** The id of another control-plane object (`to`); required unless nullable (then default null). */
export type RefField = Common & { kind: "ref"; to: ConfigObjectType; isNullable?: boolean; default: null };
/** A list of web origins (`https://app.example.com`). */
export type OriginsField = Common & { kind: "origins"; maxItems: number; default: readonly string[] };
/** A colour, `#rrggbb`; null (the default) = Porter's own. */
export type ColorField = Common & { kind: "color"; default: null; isNullable: true };
/** A field an admin may set. */
export type FieldDecl = IntField | RateField | TextField | EnumField | RefField | OriginsField | ColorField;
/** Read-only state shown with the row (the scheduler's or an action's, not a knob). */
export type StateDecl = { kind: "int" | "timestamp" | "boolean"; isNullable?: boolean; label: string };

/** The audit object types of the entities the console edits as tables. */
export type ConfigObjectType = "pool" | "resource_key" | "queue" | "job_type" | "tenant";

/** A problem with one field, shaped like a zod issue (`path`, `message`). */
export type FieldIssue = { path: string[]; message: string };

/** One control-plane entity: its table, audit object type, fields, state and cross-field rules. */
export type EntityDecl = {
  /** Table, and Prisma model (`prisma/schema.prisma`) of the rows. */
  table: string;
  model: string;
  noun: string;
  idLabel: string;
  idPlaceholder: string;
  fields: Readonly<Record<string, FieldDecl>>;
  state?: Readonly<Record<string, StateDecl>>;
  /** Cross-field rules on a complete row (a create, or an update's merged row). */
  issues?: (row: Record<string, unknown>) => FieldIssue[];
};

const entity = <const E extends EntityDecl>(e: E): E => e;
const DAY_S = 86_400;
const description = { kind: "textarea", label: "Description", maxLength: 500, default: "" } as const;
const nullableInt = (label: string, min: number, max: number, rest: Omit<Common, "label"> = {}) =>
  ({ kind: "int", label, min, max, default: null, isNullable: true, ...rest }) as const;
const rate = (label: string, rest: Omit<Common, "label"> = {}) => ({ kind: "rate", label, max: 1_000_000, default: null, isNullable: true, ...rest }) as const;
const notAbove = (v: Record<string, unknown>, low: string, high: string, message: string): FieldIssue[] =>
  typeof v[low] === "number" && typeof v[high] === "number" && (v[low] as number) > (v[high] as number) ? [{ path: [low], message }] : [];

/** Pools (lanes): a set of queues served by the same worker processes. */
export const POOL = entity({
  table: "pools",
  model: "pool",
  noun: "pool",
  idLabel: "Pool id",
  idPlaceholder: "interactive",
  fields: {
    description,
    concurrency_cap: nullableInt("Concurrency cap", 1, 100_000, { help: "running jobs across every worker of the pool; empty = the workers' own slots" }),
    worker_concurrency: {
      kind: "int",
      label: "Slots per worker",
      min: 1,
      max: 10_000,
      default: 10,
      help: "default when a worker starts without --concurrency",
    },
  },
});

/** Shared scarce resources; `current_limit` and `throttled_until` are scheduler state, not knobs. */
export const RESOURCE_KEY = entity({
  table: "resource_keys",
  model: "resourceKey",
  noun: "resource key",
  idLabel: "Resource key",
  idPlaceholder: "llm",
  fields: {
    description,
    concurrency_limit: nullableInt("Concurrency limit", 1, 100_000),
    rate_per_second: rate("Rate", { unit: "/s" }),
    burst: nullableInt("Burst", 1, 1_000_000),
  },
  state: {
    current_limit: { kind: "int", isNullable: true, label: "Adaptive limit" },
    throttled_until: { kind: "timestamp", isNullable: true, label: "Throttled until" },
  },
});

/** Queues: every knob of the data model; `paused` is changed by pause/resume, not by an edit. */
export const QUEUE = entity({
  table: "queues",
  model: "queue",
  noun: "queue",
  idLabel: "Queue id",
  idPlaceholder: "email.transactional",
  fields: {
    pool_id: { kind: "ref", to: "pool", label: "Pool (lane)", default: null },
    description,
    default_priority: { kind: "int", label: "Default priority", min: 0, max: 100, default: 50, help: "0–100; used when a producer gives none" },
    max_priority: { kind: "int", label: "Max priority", min: 0, max: 100, default: 100, help: "producers' priorities are clamped to it" },
    concurrency_cap: nullableInt("Concurrency cap", 1, 100_000, { help: "running jobs of this queue across all workers; empty = none" }),
    lease_seconds: { kind: "int", label: "Lease length", min: 1, max: DAY_S, default: 30, unit: "s", help: "a worker silent this long loses the job" },
    default_max_attempts: { kind: "int", label: "Default max attempts", min: 1, max: 1000, default: 5 },
    max_attempts: { kind: "int", label: "Retry ceiling (max attempts)", min: 1, max: 1000, default: 25 },
    backoff_base_ms: { kind: "int", label: "Backoff base", min: 0, max: DAY_S * 1000, default: 1000, unit: "ms" },
    backoff_cap_ms: { kind: "int", label: "Backoff cap", min: 0, max: 7 * DAY_S * 1000, default: 300_000, unit: "ms" },
    default_timeout_s: { kind: "int", label: "Default timeout", min: 1, max: 7 * DAY_S, default: 300, unit: "s" },
    max_timeout_s: { kind: "int", label: "Max timeout", min: 1, max: 7 * DAY_S, default: 3600, unit: "s" },
    default_deadline_s: nullableInt("Default deadline", 1, 365 * DAY_S, { unit: "s", help: "after enqueue; empty = none" }),
    max_runtime_s: { kind: "int", label: "Max runtime", min: 1, max: 7 * DAY_S, default: 3600, unit: "s", help: "heartbeats never extend a lease past it" },
    retention_s: { kind: "int", label: "Retention of finished jobs", min: 0, max: 365 * DAY_S, default: 7 * DAY_S, unit: "s" },
    aging_s: nullableInt("Priority aging", 1, 30 * DAY_S, { unit: "s", help: "a waiting job reaches top priority after this; empty = off" }),
    target_wait_s: nullableInt("Wait target", 1, 30 * DAY_S, {
      unit: "s",
      help: "a queue whose projected wait exceeds it is at risk (porter stats); empty = none",
    }),
    resource_key_id: { kind: "ref", to: "resource_key", label: "Resource key", isNullable: true, default: null },
    admission: {
      kind: "enum",
      label: "Over a tenant's admission limits",
      default: "reject",
      options: [
        { value: "reject", label: "reject (429 + Retry-After)" },
        { value: "defer", label: "defer (accept at priority 0)" },
      ],
    },
  },
  state: { paused: { kind: "boolean", label: "Paused" } },
  issues: (v) => [
    ...notAbove(v, "default_priority", "max_priority", "must not exceed the max priority"),
    ...notAbove(v, "default_max_attempts", "max_attempts", "must not exceed the retry ceiling (max attempts)"),
    ...notAbove(v, "backoff_base_ms", "backoff_cap_ms", "must not exceed the backoff cap"),
    ...notAbove(v, "default_timeout_s", "max_timeout_s", "must not exceed the max timeout"),
  ],
});

/** The job-type registry: type → queue, payload schema version, timeout override. */
export const JOB_TYPE = entity({
  table: "job_types",
  model: "jobType",
  noun: "job type",
  idLabel: "Job type",
  idPlaceholder: "document.parse",
  fields: {
    queue_id: { kind: "ref", to: "queue", label: "Queue", default: null },
    description,
    payload_schema_version: { kind: "text", label: "Payload schema version", maxLength: 40, isRequired: true, default: "1" },
    timeout_s: nullableInt("Timeout override", 1, 7 * DAY_S, { unit: "s", help: "empty = the queue's default timeout" }),
  },
});

/** Tenants: fair-share weight, running quota, admission rate and backlog caps, ceilings. */
export const TENANT = entity({
  table: "tenants",
  model: "tenant",
  noun: "tenant",
  idLabel: "Tenant id",
  idPlaceholder: "tenant_D",
  fields: {
    name: { kind: "text", label: "Name", maxLength: 200, default: "" },
    weight: { kind: "int", label: "Fair-share weight", min: 1, max: 1000, default: 1 },
    max_running: nullableInt("Running quota", 1, 100_000, { help: "running jobs of this tenant; empty = none" }),
    start_rate_per_second: rate("Start rate", { unit: "jobs/s", help: "jobs started per second, all workers; empty = unlimited" }),
    rate_per_second: rate("Enqueue rate", { unit: "jobs/s", help: "empty = unlimited" }),
    backlog_cap: nullableInt("Backlog cap", 0, 100_000_000, { help: "queued jobs; empty = unlimited" }),
    max_priority: nullableInt("Priority ceiling", 0, 100),
    max_attempts: nullableInt("Attempts ceiling", 1, 1000),
    status_origins: {
      kind: "origins",
      label: "Status page origins",
      maxItems: 20,
      default: [],
      help: "origins allowed to embed the tenant's status page in a frame (CSP frame-ancestors), comma-separated; empty = nowhere",
    },
    status_accent: {
      kind: "color",
      label: "Status page accent",
      default: null,
      isNullable: true,
      placeholder: "#2563eb",
      help: "the status page's accent colour, #rrggbb; empty = Porter's blue",
    },
  },
});

/** The entities the console edits as tables, by audit object type. */
export const CONTROL_PLANE = { pool: POOL, resource_key: RESOURCE_KEY, queue: QUEUE, job_type: JOB_TYPE, tenant: TENANT } as const satisfies Record<
  ConfigObjectType,
  EntityDecl
>;
export type ConfigEntity = (typeof CONTROL_PLANE)[ConfigObjectType];

// ---- types of rows and inputs, from a declaration -------------------------------------------------
type ValueOf<F> = F extends { kind: "int" | "rate" }
  ? number
  : F extends { kind: "enum"; options: readonly { value: infer V }[] }
    ? V
    : F extends { kind: "origins" }
      ? string[]
      : F extends { kind: "boolean" }
        ? boolean
        : string;
type Cell<F> = F extends { isNullable: true } ? ValueOf<F> | null : ValueOf<F>;
/** The writable fields of an entity, as stored. */
export type FieldsOf<E extends EntityDecl> = { -readonly [K in keyof E["fields"]]: Cell<E["fields"][K]> };
type StateOf<E extends EntityDecl> =
  E["state"] extends Readonly<Record<string, StateDecl>> ? { -readonly [K in keyof E["state"]]: Cell<E["state"][K]> } : unknown;
/** A row as the API returns it: id, fields, state, ISO timestamps. */
export type RowOf<E extends EntityDecl> = { id: string } & FieldsOf<E> & StateOf<E> & { created_at: string; updated_at: string };
type Required_<E extends EntityDecl> = { [K in keyof E["fields"]]: E["fields"][K] extends { kind: "ref"; isNullable?: false } ? K : never }[keyof E["fields"]];
/** What a create takes: required references, every other field optional (its default applies). */
export type CreateOf<E extends EntityDecl> = { id: string; reason?: string } & Pick<FieldsOf<E>, Required_<E>> & Partial<FieldsOf<E>>;

// ---- zod from a declaration -----------------------------------------------------------------------
/** Ids of pools, queues, job types, tenants and resource keys: `email.transactional`, `tenant_A`. */
export const ZConfigId = ZStorableText.trim()
  .min(1, "required")
  .max(100, "at most 100 characters")
  .regex(/^[A-Za-z0-9][A-Za-z0-9._:-]*$/, "letters, digits and . _ : - only, starting with a letter or digit");
/** An optional note kept in the audit log with the change. */
export const ZReason = ZStorableText.trim().max(500, "at most 500 characters").optional();
/** A status page's accent colour: `#rrggbb` (stored as given; the page uses it as a CSS colour). */
export const ZAccentColor = z
  .string()
  .trim()
  .regex(/^#[0-9a-fA-F]{6}$/, "a colour as #rrggbb");
// An origin as CSP frame-ancestors takes it (the status page's header): scheme, host (or a `*.`
// wildcard of one), optional port — nothing that could end the directive (`;`, `,`, spaces).
const ZOrigin = ZStorableText.trim().regex(
  /^https?:\/\/(\*\.)?[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*(:\d{1,5})?$/,
  "an origin such as https://app.example.com (no path)",
);

/** The input schema of one field, without its default. */
export const fieldInput = (f: FieldDecl): z.ZodType => {
  const base = ((): z.ZodType => {
    switch (f.kind) {
      case "int":
        return z.number({ error: "a whole number" }).int("a whole number").min(f.min, `at least ${f.min}`).max(f.max, `at most ${f.max}`);
      case "rate":
        return z.number({ error: "a number" }).gt(0, "more than 0").max(f.max, `at most ${f.max}`);
      case "text":
      case "textarea": {
        const text = ZStorableText.trim();
        return (f.isRequired ? text.min(1, "required") : text).max(f.maxLength, `at most ${f.maxLength} characters`);
      }
      case "enum": {
        const values = f.options.map((o) => o.value) as [string, ...string[]];
        return z.enum(values, { error: values.join(" or ") });
      }
      case "ref":
        return ZConfigId;
      case "origins":
        return z.array(ZOrigin).max(f.maxItems, `at most ${f.maxItems} origins`);
      case "color":
        return ZAccentColor;
    }
  })();
  return "isNullable" in f && f.isNullable ? base.nullable() : base;
};

/** The output schema of one field or state column. */
const fieldOutput = (f: FieldDecl | StateDecl): z.ZodType => {
  const base = ((): z.ZodType => {
    switch (f.kind) {
      case "int":
        return z.number().int();
      case "rate":
        return z.number();
      case "enum":
        return z.enum(f.options.map((o) => o.value) as [string, ...string[]]);
      case "origins":
        return z.array(z.string());
      case "boolean":
        return z.boolean();
      default:
        return z.string();
    }
  })();
  return "isNullable" in f && f.isNullable ? base.nullable() : base;
};

const withDefault = (f: FieldDecl): z.ZodType =>
  f.kind === "ref" && !f.isNullable ? fieldInput(f) : (fieldInput(f) as z.ZodType<unknown>).default(f.default as never);
const mapFields = (e: EntityDecl, fn: (f: FieldDecl) => z.ZodType) => Object.fromEntries(Object.entries(e.fields).map(([k, f]) => [k, fn(f)]));
const refineWith = (e: EntityDecl) => (value: Record<string, unknown>, ctx: z.RefinementCtx) => {
  for (const issue of e.issues?.(value) ?? []) ctx.addIssue({ code: "custom", path: issue.path, message: issue.message });
};

/** Every field with its default, and the cross-field rules: the console's edit form validates with it. */
export const fieldsSchema = <E extends EntityDecl>(e: E) =>
  z.strictObject(mapFields(e, withDefault)).superRefine(refineWith(e)) as unknown as z.ZodType<FieldsOf<E>, Partial<FieldsOf<E>>>;
/** A create: id, fields (absent ones take their default), an optional reason; cross-field rules. */
export const createSchema = <E extends EntityDecl>(e: E) =>
  z.strictObject({ id: ZConfigId, ...mapFields(e, withDefault), reason: ZReason }).superRefine(refineWith(e)) as unknown as z.ZodType<
    FieldsOf<E> & { id: string; reason?: string },
    CreateOf<E>
  >;
/** An update: id, a patch of some fields (no defaults; cross-field rules run on the merged row in core), a reason. */
export const updateSchema = <E extends EntityDecl>(e: E) =>
  z.strictObject({ id: ZConfigId, patch: z.strictObject(mapFields(e, fieldInput)).partial(), reason: ZReason }) as unknown as z.ZodType<{
    id: string;
    patch: Partial<FieldsOf<E>>;
    reason?: string;
  }>;
/** A row as the API returns it. */
export const rowSchema = <E extends EntityDecl>(e: E) =>
  z.object({
    id: z.string(),
    ...mapFields(e, fieldOutput),
    ...Object.fromEntries(Object.entries(e.state ?? {}).map(([k, s]) => [k, fieldOutput(s)])),
    created_at: z.string(),
    updated_at: z.string(),
  }) as unknown as z.ZodType<RowOf<E>>;
/** The defaults a create form starts from (null ones are left out: an empty input means null). */
export const createDefaults = (e: EntityDecl): Record<string, unknown> =>
  Object.fromEntries(
    Object.entries(e.fields)
      .filter(([, f]) => f.default !== null)
      .map(([k, f]) => [k, f.default]),
  );

// ---- users and API keys ---------------------------------------------------------------------------
export const ROLE_VALUES = ["viewer", "operator", "admin"] as const;
/** The editable fields of a console user (the password is write-only). */
export const USER_FIELDS = {
  email: { kind: "email", label: "Email", maxLength: 200 },
  name: { kind: "text", label: "Name", maxLength: 200, default: "" },
  role: {
    kind: "enum",
    label: "Role",
    default: null,
    options: [
      { value: "viewer", label: "viewer — reads everything" },
      { value: "operator", label: "operator — also cancels, retries, redrives, pauses and drains" },
      { value: "admin", label: "admin — also changes configuration, keys and users" },
    ],
  },
  password: { kind: "password", label: "Initial password", minLength: 12, maxLength: 200, help: "at least 12 characters; share it out of band" },
} as const satisfies Record<string, { label: string } & Record<string, unknown>>;
export const ZRole = z.enum(ROLE_VALUES);
/** A console password: long enough to resist guessing; argon2id does the rest. */
export const ZPassword = z
  .string()
  .min(USER_FIELDS.password.minLength, `at least ${USER_FIELDS.password.minLength} characters`)
  .max(USER_FIELDS.password.maxLength, `at most ${USER_FIELDS.password.maxLength} characters`);
const ZUserName = fieldInput(USER_FIELDS.name) as z.ZodString;

/** The editable fields of an API key (its secret is generated, its scope fixed at creation). */
export const API_KEY_FIELDS = {
  name: { kind: "text", label: "Name", maxLength: 200, default: "", placeholder: "billing-service" },
  tenant_ids: { label: "Tenants", maxItems: 100 },
  /** ["*"] for every job type. */
  job_types: { label: "Job types", maxItems: 200 },
} as const;

export const ZUserCreate = z.strictObject({
  email: z.email("an email address").trim().toLowerCase().max(USER_FIELDS.email.maxLength),
  name: ZUserName.default(USER_FIELDS.name.default),
  role: ZRole,
  password: ZPassword,
});
export const ZUserUpdate = z.strictObject({
  id: ZStorableText.min(1).max(100),
  name: ZUserName.optional(),
  role: ZRole.optional(),
  disabled: z.boolean().optional(),
  password: ZPassword.optional(),
  reason: ZReason,
});
export const ZApiKeyCreate = z.strictObject({
  name: (fieldInput(API_KEY_FIELDS.name) as z.ZodString).default(API_KEY_FIELDS.name.default),
  tenant_ids: z.array(ZConfigId).min(1, "pick at least one tenant").max(API_KEY_FIELDS.tenant_ids.maxItems),
  /** ["*"] for every job type. */
  job_types: z
    .array(z.union([z.literal("*"), ZConfigId]))
    .min(1, "pick job types, or * for all")
    .max(API_KEY_FIELDS.job_types.maxItems)
    .refine((types) => !types.includes("*") || types.length === 1, "either * or a list of job types, not both"),
});
export const ZApiKeyRevoke = z.strictObject({ id: ZStorableText.min(1).max(40), reason: ZReason });
