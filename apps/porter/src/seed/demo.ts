// The demo configuration of DESIGN.md ("Demo configuration"): what `npm run db:seed` and
// `npm start` on an empty database write. Ids are fixed so scripts, docs and tests can rely on
// them. Importable: `seedDemo(prisma, { actor, adminEmail })`.
import { randomInt } from "node:crypto";
import { type ConfigObjectType, createApiKey, createConfig, getConfig, saveAlertRule, upsertUser, writeAuditTx } from "@porter/core";
import type { ControlDb, ControlTx } from "@porter/db/prisma";

type PoolRow = { id: string; description: string; concurrency_cap: number | null; worker_concurrency: number };
type ResourceKeyRow = { id: string; description: string; concurrency_limit: number | null; rate_per_second: number | null; burst: number | null };
type QueueRow = {
  id: string;
  pool_id: string;
  description: string;
  default_priority: number;
  max_priority: number;
  concurrency_cap: number | null;
  lease_seconds: number;
  default_max_attempts: number;
  max_attempts: number;
  backoff_base_ms: number;
  backoff_cap_ms: number;
  default_timeout_s: number;
  max_timeout_s: number;
  default_deadline_s: number | null;
  max_runtime_s: number;
  aging_s: number | null;
  resource_key_id: string | null;
};
type JobTypeRow = { id: string; queue_id: string; description: string; timeout_s: number | null };
type TenantRow = { id: string; name: string; weight: number };

/** Lanes: low latency, heavy work, and LLM agents under their own ceiling. */
export const DEMO_POOLS: readonly PoolRow[] = [
  { id: "interactive", description: "Low-latency work a user is waiting for", concurrency_cap: null, worker_concurrency: 16 },
  { id: "background", description: "Heavy, throughput-bound work", concurrency_cap: null, worker_concurrency: 32 },
  // The pool cap enforces the LLM ceiling today; the `llm` resource key carries it across pools.
  { id: "agents", description: "LLM agent runs, bounded by the provider's concurrency", concurrency_cap: 4, worker_concurrency: 4 },
];

/** Shared scarce resources: concurrent calls to the LLM provider. */
export const DEMO_RESOURCE_KEYS: readonly ResourceKeyRow[] = [
  { id: "llm", description: "Concurrent LLM provider calls", concurrency_limit: 4, rate_per_second: null, burst: null },
];

const queue = (row: Omit<QueueRow, "resource_key_id" | "max_priority"> & Partial<Pick<QueueRow, "resource_key_id" | "max_priority">>): QueueRow => ({
  max_priority: 100,
  resource_key_id: null,
  ...row,
});

/**
 * Queues with realistic knobs: interactive queues have short leases, tight backoff caps and
 * deadlines (a stale reply is worthless); bulk work has a lower priority, a concurrency cap and
 * long backoff; `diag` is tuned for fault drills (5 s lease, 5 attempts, 1 s backoff base).
 */
export const DEMO_QUEUES: readonly QueueRow[] = [
  queue({
    id: "email.transactional",
    pool_id: "interactive",
    description: "Password resets, receipts, sign-in links",
    default_priority: 80,
    concurrency_cap: null,
    lease_seconds: 15,
    default_max_attempts: 8,
    max_attempts: 20,
    backoff_base_ms: 500,
    backoff_cap_ms: 30_000,
    default_timeout_s: 30,
    max_timeout_s: 120,
    default_deadline_s: 3_600,
    max_runtime_s: 300,
    aging_s: 60,
  }),
  queue({
    id: "notifications",
    pool_id: "interactive",
    description: "Webhooks and push notifications to producers",
    default_priority: 60,
    concurrency_cap: null,
    lease_seconds: 15,
    default_max_attempts: 10,
    max_attempts: 25,
    backoff_base_ms: 1_000,
    backoff_cap_ms: 60_000,
    default_timeout_s: 30,
    max_timeout_s: 120,
    default_deadline_s: 86_400,
    max_runtime_s: 300,
    aging_s: 120,
  }),
  queue({
    id: "bots.inbound",
    pool_id: "interactive",
    description: "Incoming chat-bot messages awaiting a reply",
    default_priority: 90,
    concurrency_cap: 8,
    lease_seconds: 10,
    default_max_attempts: 3,
    max_attempts: 5,
    backoff_base_ms: 250,
    backoff_cap_ms: 5_000,
    default_timeout_s: 20,
    max_timeout_s: 60,
    default_deadline_s: 300,
    max_runtime_s: 120,
    aging_s: 30,
  }),
  queue({
    id: "harvester.sync",
    pool_id: "background",
    description: "Pulls from external sources (rate-sensitive)",
    default_priority: 40,
    concurrency_cap: 4,
    lease_seconds: 60,
    default_max_attempts: 5,
    max_attempts: 10,
    backoff_base_ms: 5_000,
    backoff_cap_ms: 600_000,
    default_timeout_s: 1_800,
    max_timeout_s: 7_200,
    default_deadline_s: null,
    max_runtime_s: 7_200,
    aging_s: 3_600,
  }),
  queue({
    id: "ks.background",
    pool_id: "background",
    description: "Knowledge store: parsing and embedding documents",
    default_priority: 40,
    concurrency_cap: null,
    lease_seconds: 60,
    default_max_attempts: 5,
    max_attempts: 15,
    backoff_base_ms: 2_000,
    backoff_cap_ms: 300_000,
    default_timeout_s: 600,
    max_timeout_s: 3_600,
    default_deadline_s: null,
    max_runtime_s: 3_600,
    aging_s: 1_800,
  }),
  queue({
    id: "email.bulk",
    pool_id: "background",
    description: "Newsletters and campaigns (never ahead of transactional mail)",
    default_priority: 20,
    max_priority: 50,
    concurrency_cap: 8,
    lease_seconds: 30,
    default_max_attempts: 5,
    max_attempts: 10,
    backoff_base_ms: 5_000,
    backoff_cap_ms: 900_000,
    default_timeout_s: 120,
    max_timeout_s: 600,
    default_deadline_s: null,
    max_runtime_s: 600,
    aging_s: 3_600,
  }),
  queue({
    id: "diag",
    pool_id: "background",
    description: "Built-in diagnostic jobs (diag.*) for smoke tests and fault drills",
    default_priority: 50,
    concurrency_cap: null,
    lease_seconds: 5,
    default_max_attempts: 5,
    max_attempts: 25,
    backoff_base_ms: 1_000,
    backoff_cap_ms: 10_000,
    default_timeout_s: 60,
    max_timeout_s: 600,
    default_deadline_s: null,
    max_runtime_s: 600,
    aging_s: null,
  }),
  queue({
    id: "agent.runs",
    pool_id: "agents",
    description: "LLM agent runs",
    resource_key_id: "llm",
    default_priority: 50,
    concurrency_cap: 4,
    lease_seconds: 30,
    default_max_attempts: 3,
    max_attempts: 5,
    backoff_base_ms: 2_000,
    backoff_cap_ms: 120_000,
    default_timeout_s: 900,
    max_timeout_s: 3_600,
    default_deadline_s: null,
    max_runtime_s: 3_600,
    aging_s: 600,
  }),
];

/** The job-type registry: each type decides its queue. */
export const DEMO_JOB_TYPES: readonly JobTypeRow[] = [
  { id: "document.parse", queue_id: "ks.background", description: "Parse a stored document into chunks", timeout_s: null },
  { id: "embed.chunks", queue_id: "ks.background", description: "Embed parsed chunks", timeout_s: null },
  { id: "email.send", queue_id: "email.transactional", description: "Send one transactional email", timeout_s: null },
  { id: "email.campaign", queue_id: "email.bulk", description: "Send one batch of a campaign", timeout_s: null },
  { id: "agent.run", queue_id: "agent.runs", description: "Run an LLM agent task", timeout_s: null },
  { id: "webhook.deliver", queue_id: "notifications", description: "Deliver a signed webhook", timeout_s: null },
  { id: "harvester.sync", queue_id: "harvester.sync", description: "Synchronise one external source", timeout_s: null },
  { id: "diag.sleep", queue_id: "diag", description: "Sleeps {ms}", timeout_s: null },
  { id: "diag.fail", queue_id: "diag", description: "Fails {mode} until {until_attempt}", timeout_s: null },
  { id: "diag.effect", queue_id: "diag", description: "Applies one effect to diag_effects[{key}]", timeout_s: null },
  { id: "diag.hang", queue_id: "diag", description: "Ignores its abort signal (timeout handling)", timeout_s: 10 },
];

/** Tenants sharing the pools; tenant_C has twice the fair share. */
export const DEMO_TENANTS: readonly TenantRow[] = [
  { id: "tenant_A", name: "Tenant A", weight: 1 },
  { id: "tenant_B", name: "Tenant B", weight: 1 },
  { id: "tenant_C", name: "Tenant C", weight: 2 },
];

/** Default admin login when PORTER_ADMIN_EMAIL is unset. */
export const DEFAULT_ADMIN_EMAIL = "admin@porter.local";

export type SeedDemoOptions = {
  /** Recorded in the audit log, e.g. `seed`. */
  actor: string;
  adminEmail: string;
  /** Password of a newly created admin; generated (and returned once) when omitted. */
  adminPassword?: string;
  /** Insert the missing demo rows even when the control plane already has some. */
  force?: boolean;
};

export type SeedDemoResult = {
  /** Whether anything was written. */
  created: boolean;
  adminEmail: string;
  /** Whether the admin user was created now (an existing user is never touched). */
  adminCreated: boolean;
  /** Only when the admin was created now with a generated password: shown once, stored hashed. */
  adminPassword?: string;
  /** A producer key for every demo tenant and job type; only when the database had no key. */
  producerKey?: string;
};

/**
 * Seeds the demo configuration in one transaction, audited, through core's control-plane
 * functions on the Prisma client (each nests in the seed's transaction as a savepoint): pools,
 * the `llm` resource key, queues, job types, tenants (createConfig), the admin user (upsertUser)
 * and a producer API key (createApiKey). Does nothing (`created: false`) when the control plane
 * (pools, queues, job types, tenants) already has rows, unless `force`, which inserts the demo
 * rows that are missing and leaves existing ones as they are. Idempotent: a second call writes
 * nothing.
 */
export const seedDemo = async (db: ControlDb, options: SeedDemoOptions): Promise<SeedDemoResult> =>
  db.$transaction(
    async (tx) => {
      // Serialises concurrent seeders (npm start and npm run db:seed at once) for the transaction.
      await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtext('porter:seed-demo'))`;
      const isConfigured =
        (await tx.pool.findFirst({ select: { id: true } })) !== null
        || (await tx.queue.findFirst({ select: { id: true } })) !== null
        || (await tx.jobType.findFirst({ select: { id: true } })) !== null
        || (await tx.tenant.findFirst({ select: { id: true } })) !== null;
      const base = { adminEmail: options.adminEmail.toLowerCase(), adminCreated: false };
      if (isConfigured && !options.force) return { created: false, ...base };

      const inserted = [
        ...(await insertMissing(tx, "pool", DEMO_POOLS, options.actor)),
        ...(await insertMissing(tx, "resource_key", DEMO_RESOURCE_KEYS, options.actor)),
        ...(await insertMissing(tx, "queue", DEMO_QUEUES, options.actor)),
        ...(await insertMissing(tx, "job_type", DEMO_JOB_TYPES, options.actor)),
        ...(await insertMissing(tx, "tenant", DEMO_TENANTS, options.actor)),
        ...(await seedAlertRules(tx, options.actor)),
      ];

      const admin = await ensureAdmin(tx, options);
      const hasKey = (await tx.apiKey.findFirst({ select: { id: true } })) !== null;
      const producerKey = hasKey
        ? undefined
        : (await createApiKey(tx, { tenantIds: DEMO_TENANTS.map((t) => t.id), jobTypes: ["*"], name: "demo producer", actor: options.actor })).key;

      const created = inserted.length > 0 || admin.created || producerKey !== undefined;
      if (created) {
        await writeAuditTx(tx, [
          { actor: options.actor, action: "seed.demo", objectType: "seed", objectId: "demo", after: { inserted, force: options.force ?? false } },
        ]);
      }
      return {
        created,
        ...base,
        adminCreated: admin.created,
        ...(admin.generatedPassword ? { adminPassword: admin.generatedPassword } : {}),
        ...(producerKey ? { producerKey } : {}),
      };
    },
    // A second seeder waits on the lock for the first; the admin's argon2id hash takes a moment.
    { maxWait: 10_000, timeout: 60_000 },
  );

/**
 * The demo's DLQ alert rules (global): more than 10 deaths in 5 minutes, and a failure group
 * reopened within the hour. Only when there is no rule at all (an operator's rules, or their
 * deletion of these, are left alone); each through core's saveAlertRule (audited).
 */
export const DEMO_ALERT_RULES = [
  { queue_id: null, kind: "deaths_5m", threshold: 10, enabled: true },
  { queue_id: null, kind: "group_reopened", threshold: 3600, enabled: true },
] as const;

const seedAlertRules = async (tx: ControlTx, actor: string): Promise<string[]> => {
  if ((await tx.alertRule.findFirst({ select: { id: true } })) !== null) return [];
  const done: string[] = [];
  for (const input of DEMO_ALERT_RULES) {
    const rule = await saveAlertRule(tx, { input: { ...input }, actor });
    done.push(`alert_rule:${rule.id}`);
  }
  return done;
};

/**
 * Creates the rows whose id is not there yet, each through createConfig (validated, audited as
 * `<object type>.create` with reason "demo seed"); returns `<object type>:<id>` of each.
 */
const insertMissing = async <T extends { id: string }>(tx: ControlTx, type: ConfigObjectType, rows: readonly T[], actor: string): Promise<string[]> => {
  const done: string[] = [];
  for (const row of rows) {
    if (await getConfig(tx, type, row.id)) continue;
    await createConfig(tx, type, row, { actor, reason: "demo seed" });
    done.push(`${type}:${row.id}`);
  }
  return done;
};

const PASSWORD_ALPHABET = "abcdefghijkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789";

/** 18 characters of an unambiguous alphabet (~104 bits), easy to copy from a terminal. */
const generatePassword = (): string => Array.from({ length: 18 }, () => PASSWORD_ALPHABET[randomInt(PASSWORD_ALPHABET.length)]).join("");

/** Creates the admin user when no user has that email; an existing user is left as it is. */
const ensureAdmin = async (tx: ControlTx, options: SeedDemoOptions): Promise<{ created: boolean; generatedPassword?: string }> => {
  if (await tx.user.findUnique({ where: { email: options.adminEmail.toLowerCase() }, select: { id: true } })) return { created: false };
  const generatedPassword = options.adminPassword ? undefined : generatePassword();
  const id = await upsertUser(tx, { email: options.adminEmail, name: "Admin", password: options.adminPassword ?? generatedPassword!, role: "admin" });
  await writeAuditTx(tx, [
    {
      actor: options.actor,
      action: "user.create",
      objectType: "user",
      objectId: id,
      after: { email: options.adminEmail.toLowerCase(), role: "admin" },
      reason: "demo seed",
    },
  ]);
  return generatedPassword ? { created: true, generatedPassword } : { created: true };
};
