// The one test factory for control-plane rows (pools, resource keys, queues, job types, tenants,
// API keys). It writes only the columns a test gives: every other column takes the database's
// default (prisma/migrations), so a test that depends on a setting says so, and the defaults are
// written once. Integration tests only.
import type { ControlTx } from "@porter/db/prisma";
import { createApiKey } from "../control-plane/api-keys";
import type { Db } from "../db";

export type PoolRow = { id: string; description?: string; concurrency_cap?: number | null; worker_concurrency?: number };

export type ResourceKeyRow = {
  id: string;
  description?: string;
  concurrency_limit?: number | null;
  rate_per_second?: number | null;
  burst?: number | null;
  current_limit?: number | null;
  throttled_until?: Date | null;
};

export type QueueRow = {
  id: string;
  pool_id: string;
  description?: string;
  default_priority?: number;
  max_priority?: number;
  concurrency_cap?: number | null;
  lease_seconds?: number;
  default_max_attempts?: number;
  max_attempts?: number;
  backoff_base_ms?: number;
  backoff_cap_ms?: number;
  default_timeout_s?: number;
  max_timeout_s?: number;
  default_deadline_s?: number | null;
  max_runtime_s?: number;
  retention_s?: number;
  aging_s?: number | null;
  target_wait_s?: number | null;
  paused?: boolean;
  resource_key_id?: string | null;
  admission?: string;
};

export type JobTypeRow = { id: string; queue_id: string; description?: string; payload_schema_version?: string; timeout_s?: number | null };

export type TenantRow = {
  id: string;
  name?: string;
  weight?: number;
  max_running?: number | null;
  rate_per_second?: number | null;
  start_rate_per_second?: number | null;
  backlog_cap?: number | null;
  max_priority?: number | null;
  max_attempts?: number | null;
  status_origins?: string[];
};

type Table = "pools" | "resource_keys" | "queues" | "job_types" | "tenants";

/**
 * Inserts `rows` into `table`, each with only its given (not undefined) columns. With `ifAbsent`,
 * a row whose id exists is left as it is (pools and tenants several planes of one test share).
 */
export const insertRows = async (db: Db, table: Table, rows: readonly object[], options: { ifAbsent?: boolean } = {}): Promise<void> => {
  for (const row of rows) {
    const entries = Object.entries(row).filter(([, value]) => value !== undefined);
    const columns = entries.map(([column]) => column).join(", ");
    const values = entries.map((_, i) => `$${i + 1}`).join(", ");
    const conflict = options.ifAbsent ? " ON CONFLICT (id) DO NOTHING" : "";
    await db.query(
      `INSERT INTO ${table} (${columns}) VALUES (${values})${conflict}`,
      entries.map(([, value]) => value),
    );
  }
};

/** What {@link controlPlane} builds; rows name columns as the tables do. */
export type ControlPlaneSpec = {
  /** The pool's id or row ("p1" when left out); an existing pool is kept. */
  pool?: string | PoolRow;
  resourceKeys?: ResourceKeyRow[];
  /** The pool's queues (pool_id is the pool's). */
  queues: Array<Omit<QueueRow, "pool_id">>;
  /** Job types and their queue; one `<queue id>.job` per queue when left out. */
  jobTypes?: Array<Omit<JobTypeRow, "queue_id"> & { queue: string }>;
  /** Tenants by id or row (tenant_A and tenant_B when left out); existing tenants are kept. */
  tenants?: Array<string | TenantRow>;
};

/**
 * Builds a control plane directly in SQL for tests: a pool, resource keys, the pool's queues,
 * their job types and tenants. Returns the pool's id.
 */
export const controlPlane = async (db: Db, spec: ControlPlaneSpec): Promise<string> => {
  const pool: PoolRow = typeof spec.pool === "object" ? spec.pool : { id: spec.pool ?? "p1" };
  await insertRows(db, "pools", [pool], { ifAbsent: true });
  await insertRows(db, "resource_keys", spec.resourceKeys ?? []);
  await insertRows(
    db,
    "queues",
    spec.queues.map((q) => ({ ...q, pool_id: pool.id })),
  );
  const jobTypes = spec.jobTypes ?? spec.queues.map((q) => ({ id: `${q.id}.job`, queue: q.id }));
  await insertRows(
    db,
    "job_types",
    jobTypes.map(({ queue, ...t }) => ({ ...t, queue_id: queue })),
  );
  const tenants = (spec.tenants ?? ["tenant_A", "tenant_B"]).map((t) => (typeof t === "string" ? { id: t } : t));
  await insertRows(db, "tenants", tenants, { ifAbsent: true });
  return pool.id;
};

/**
 * Creates an API key through core's Prisma path (hashed secret, audited as `test:factory`); scope and name as
 * given, the rest the database's defaults. Returns the full key and its id.
 */
export const apiKey = async (
  db: ControlTx,
  row: { tenant_ids: string[]; job_types: string[]; name?: string; rate_per_second?: number | null },
): Promise<{ key: string; id: string }> => {
  const { key, id } = await createApiKey(db, {
    tenantIds: row.tenant_ids,
    jobTypes: row.job_types,
    name: row.name,
    ratePerSecond: row.rate_per_second,
    actor: "test:factory",
  });
  return { key, id };
};
