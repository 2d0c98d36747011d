import { AppError } from "@porter/contracts";
import { writeAudit } from "./audit";
import { inTransaction, type Db } from "./db";

/** A problem with one field of a control-plane object, shaped like a zod issue (`path`, `message`). */
export type FieldIssue = { path: string[]; message: string };

/** A control-plane table the console edits: which columns it may write, and how it is audited. */
export type ConfigTable = {
  table: string;
  /** `object_type` of its audit rows, and the prefix of their actions (`queue.create`, `queue.update`). */
  objectType: string;
  /** Columns a create or update may set (besides `id`), snake_case as on the wire. */
  columns: readonly string[];
  /** Columns shown in audit `before`/`after` and list results besides `columns` (read-only state). */
  readOnly?: readonly string[];
};

/** Pools (lanes). */
export const POOLS_TABLE: ConfigTable = { table: "pools", objectType: "pool", columns: ["description", "concurrency_cap", "worker_concurrency"] };
/** Shared scarce resources; `current_limit` and `throttled_until` are scheduler state, not knobs. */
export const RESOURCE_KEYS_TABLE: ConfigTable = {
  table: "resource_keys",
  objectType: "resource_key",
  columns: ["description", "concurrency_limit", "rate_per_second", "burst"],
  readOnly: ["current_limit", "throttled_until"],
};
/** Queues: every knob of the data model; `paused` is changed by pause/resume (setQueuePaused). */
export const QUEUES_TABLE: ConfigTable = {
  table: "queues",
  objectType: "queue",
  columns: [
    "pool_id", "description", "default_priority", "max_priority", "concurrency_cap", "lease_seconds",
    "default_max_attempts", "max_attempts", "backoff_base_ms", "backoff_cap_ms", "default_timeout_s",
    "max_timeout_s", "default_deadline_s", "max_runtime_s", "retention_s", "aging_s", "resource_key_id", "admission",
  ],
  readOnly: ["paused"],
};
/** The job-type registry: type → queue, payload schema version, timeout override. */
export const JOB_TYPES_TABLE: ConfigTable = {
  table: "job_types",
  objectType: "job_type",
  columns: ["queue_id", "description", "payload_schema_version", "timeout_s"],
};
/** Tenants: fair-share weight, running quota, admission rate and backlog caps, ceilings. */
export const TENANTS_TABLE: ConfigTable = {
  table: "tenants",
  objectType: "tenant",
  columns: [
    "name", "weight", "max_running", "start_rate_per_second", "rate_per_second", "backlog_cap", "max_priority", "max_attempts",
    "status_origins",
  ],
};

/** The tables {@link createConfig}/{@link updateConfig} accept, by object type. */
export const CONFIG_TABLES = {
  pool: POOLS_TABLE,
  resource_key: RESOURCE_KEYS_TABLE,
  queue: QUEUES_TABLE,
  job_type: JOB_TYPES_TABLE,
  tenant: TENANTS_TABLE,
} as const;
export type ConfigObjectType = keyof typeof CONFIG_TABLES;

/** One row as the console sees it: id, knobs, read-only state, and ISO timestamps. */
export type ConfigRow = Record<string, unknown> & { id: string; created_at: string; updated_at: string };

const selectList = (spec: ConfigTable): string =>
  ["id", ...spec.columns, ...(spec.readOnly ?? []), "created_at", "updated_at"].map((c) => `"${c}"`).join(", ");

const toRow = (row: Record<string, unknown>): ConfigRow => {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(row)) out[key] = value instanceof Date ? value.toISOString() : value;
  return out as ConfigRow;
};

/** Every row of a control-plane table, by id. */
export const listConfig = async (db: Db, type: ConfigObjectType): Promise<ConfigRow[]> => {
  const spec = CONFIG_TABLES[type];
  const { rows } = await db.query(`SELECT ${selectList(spec)} FROM ${spec.table} ORDER BY id`);
  return rows.map(toRow);
};

/** One row, or null. */
export const getConfig = async (db: Db, type: ConfigObjectType, id: string): Promise<ConfigRow | null> => {
  const spec = CONFIG_TABLES[type];
  const { rows } = await db.query(`SELECT ${selectList(spec)} FROM ${spec.table} WHERE id = $1`, [id]);
  return rows[0] ? toRow(rows[0]) : null;
};

const pick = (spec: ConfigTable, values: Record<string, unknown>): Array<[string, unknown]> =>
  spec.columns.filter((c) => values[c] !== undefined).map((c) => [c, values[c]]);

const auditable = (spec: ConfigTable, row: ConfigRow): Record<string, unknown> =>
  Object.fromEntries(["id", ...spec.columns, ...(spec.readOnly ?? [])].map((c) => [c, row[c]]));

/**
 * Maps a constraint violation of a control-plane write to an AppError a form can show: an unknown
 * reference (pool, queue, resource key) is a 400 on that field, a duplicate id a 409, a failed
 * CHECK a 400. Anything else is rethrown as is.
 */
const asConfigError = (error: unknown, spec: ConfigTable, id: string): never => {
  const pgError = error as { code?: string; constraint?: string; detail?: string; column?: string };
  if (pgError.code === "23505") {
    throw new AppError("CONFLICT", { message: `${spec.objectType} ${id} already exists`, details: { issues: [{ path: ["id"], message: "already exists" }] } });
  }
  if (pgError.code === "23503") {
    const column = /Key \(([a-z_]+)\)/.exec(pgError.detail ?? "")?.[1];
    const field = column && spec.columns.includes(column) ? column : undefined;
    throw new AppError("BAD_REQUEST", {
      message: field ? `${field}: unknown ${field.replace(/_id$/, "").replace(/_/g, " ")}` : `${spec.objectType} ${id} is still referenced`,
      details: { issues: [{ path: field ? [field] : ["id"], message: field ? "does not exist" : "still referenced" }] },
    });
  }
  if (pgError.code === "23514" || pgError.code === "22003" || pgError.code === "23502") {
    throw new AppError("BAD_REQUEST", { message: `invalid ${spec.objectType}: ${pgError.constraint ?? pgError.column ?? "a value is out of range"}` });
  }
  throw error;
};

const refuseIssues = (spec: ConfigTable, issues: FieldIssue[]): void => {
  if (issues.length === 0) return;
  throw new AppError("BAD_REQUEST", {
    message: `invalid ${spec.objectType}: ${issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}`,
    details: { issues },
  });
};

/** Options shared by create and update. */
export type ConfigWriteOptions = {
  actor: string;
  reason?: string;
  /** Cross-field checks on the complete row (after merging a patch); issues refuse the write (400). */
  validate?: (row: Record<string, unknown>) => FieldIssue[];
};

/**
 * Creates a control-plane row from the table's writable columns (absent ones take the column
 * default) and appends a `<type>.create` audit row with the new values, in one transaction.
 * A duplicate id is a 409; an unknown reference a 400 naming the field.
 */
export const createConfig = async (
  db: Db,
  type: ConfigObjectType,
  values: Record<string, unknown> & { id: string },
  options: ConfigWriteOptions,
): Promise<ConfigRow> => {
  const spec = CONFIG_TABLES[type];
  refuseIssues(spec, options.validate?.(values) ?? []);
  const fields = pick(spec, values);
  const columns = ["id", ...fields.map(([c]) => c)];
  const params = [values.id, ...fields.map(([, v]) => v)];
  return inTransaction(db, async (client) => {
    let row: ConfigRow;
    try {
      const { rows } = await client.query(
        `INSERT INTO ${spec.table} (${columns.map((c) => `"${c}"`).join(", ")})
         VALUES (${params.map((_, i) => `$${i + 1}`).join(", ")})
         RETURNING ${selectList(spec)}`,
        params,
      );
      row = toRow(rows[0]!);
    } catch (error) {
      return asConfigError(error, spec, values.id);
    }
    await writeAudit(client, [
      { actor: options.actor, action: `${spec.objectType}.create`, objectType: spec.objectType, objectId: row.id, after: auditable(spec, row), reason: options.reason ?? null },
    ]);
    return row;
  });
};

/**
 * Applies a patch of writable columns to a control-plane row (locked while it is merged and
 * validated) and appends a `<type>.update` audit row with the changed fields before → after, in
 * one transaction. A patch that changes nothing writes nothing. Unknown id: 404.
 */
export const updateConfig = async (
  db: Db,
  type: ConfigObjectType,
  id: string,
  patch: Record<string, unknown>,
  options: ConfigWriteOptions,
): Promise<ConfigRow> => {
  const spec = CONFIG_TABLES[type];
  return inTransaction(db, async (client) => {
    const { rows: current } = await client.query(`SELECT ${selectList(spec)} FROM ${spec.table} WHERE id = $1 FOR UPDATE`, [id]);
    if (!current[0]) throw new AppError("NOT_FOUND", { message: `${spec.objectType} ${id} not found` });
    const before = toRow(current[0]);
    const changed = pick(spec, patch).filter(([c, v]) => JSON.stringify(before[c]) !== JSON.stringify(v));
    refuseIssues(spec, options.validate?.({ ...before, ...Object.fromEntries(pick(spec, patch)) }) ?? []);
    if (changed.length === 0) return before;
    let after: ConfigRow;
    try {
      const { rows } = await client.query(
        `UPDATE ${spec.table} SET ${changed.map(([c], i) => `"${c}" = $${i + 2}`).join(", ")}, updated_at = now()
          WHERE id = $1 RETURNING ${selectList(spec)}`,
        [id, ...changed.map(([, v]) => v)],
      );
      after = toRow(rows[0]!);
    } catch (error) {
      return asConfigError(error, spec, id);
    }
    await writeAudit(client, [
      {
        actor: options.actor,
        action: `${spec.objectType}.update`,
        objectType: spec.objectType,
        objectId: id,
        before: Object.fromEntries(changed.map(([c]) => [c, before[c]])),
        after: Object.fromEntries(changed.map(([c]) => [c, after[c]])),
        reason: options.reason ?? null,
      },
    ]);
    return after;
  });
};

/**
 * Drains queues: pauses each (claims stop at once, running jobs finish), audited as
 * `queue.pause` with reason "drain" unless one is given, in one transaction. Returns the queues
 * that were not paused before. The console shows progress as the running count falls to zero.
 */
export const drainQueues = async (db: Db, params: { queueIds: string[]; actor: string; reason?: string }): Promise<string[]> =>
  inTransaction(db, async (client) => {
    const { rows } = await client.query<{ id: string; was: boolean }>(
      `UPDATE queues q SET paused = true, updated_at = now() FROM queues old
        WHERE q.id = ANY($1::text[]) AND old.id = q.id RETURNING q.id, old.paused AS was`,
      [params.queueIds],
    );
    const missing = params.queueIds.filter((id) => !rows.some((r) => r.id === id));
    if (missing.length) throw new AppError("NOT_FOUND", { message: `queue(s) not found: ${missing.join(", ")}` });
    const changed = rows.filter((r) => !r.was);
    await writeAudit(
      client,
      changed.map((r) => ({
        actor: params.actor,
        action: "queue.pause",
        objectType: "queue",
        objectId: r.id,
        before: { paused: false },
        after: { paused: true },
        reason: params.reason ?? "drain",
      })),
    );
    return changed.map((r) => r.id).sort();
  });
