import { AppError } from "@porter/contracts";
import { CONTROL_PLANE, type ConfigObjectType, type EntityDecl, type FieldIssue } from "@porter/contracts/control-plane";
import type { ControlDb, ControlTx, Prisma } from "@porter/db/prisma";
import { writeAuditTx } from "./audit";

export type { ConfigObjectType, FieldIssue } from "@porter/contracts/control-plane";

/** A control-plane table the console edits: which columns it may write, and how it is audited. */
export type ConfigTable = {
  table: string;
  /** `object_type` of its audit rows, and the prefix of their actions (`queue.create`, `queue.update`). */
  objectType: ConfigObjectType;
  /** Columns a create or update may set (besides `id`), snake_case as on the wire. */
  columns: readonly string[];
  /** Columns shown in audit `before`/`after` and list results besides `columns` (read-only state). */
  readOnly: readonly string[];
  entity: EntityDecl;
};

const tableOf = (objectType: ConfigObjectType): ConfigTable => {
  const entity: EntityDecl = CONTROL_PLANE[objectType];
  return { table: entity.table, objectType, columns: Object.keys(entity.fields), readOnly: Object.keys(entity.state ?? {}), entity };
};

/**
 * The tables {@link createConfig}/{@link updateConfig} accept, by object type: the writable columns
 * are the fields of the entity's declaration in @porter/contracts/control-plane.
 */
export const CONFIG_TABLES: Record<ConfigObjectType, ConfigTable> = {
  pool: tableOf("pool"),
  resource_key: tableOf("resource_key"),
  queue: tableOf("queue"),
  job_type: tableOf("job_type"),
  tenant: tableOf("tenant"),
};

/** One row as the console sees it: id, knobs, read-only state, and ISO timestamps. */
export type ConfigRow = Record<string, unknown> & { id: string; created_at: string; updated_at: string };

/** `concurrency_cap` → `concurrencyCap`: schema.prisma maps every snake_case column to camelCase. */
export const prismaField = (column: string): string => column.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());

const wireColumns = (spec: ConfigTable): string[] => ["id", ...spec.columns, ...spec.readOnly, "created_at", "updated_at"];

// The delegates of the five models share this shape; Prisma's own types differ per model.
type Delegate = {
  findMany: (args: object) => Promise<Record<string, unknown>[]>;
  findUnique: (args: object) => Promise<Record<string, unknown> | null>;
  create: (args: object) => Promise<Record<string, unknown>>;
  update: (args: object) => Promise<Record<string, unknown>>;
};
const delegate = (db: ControlDb | Prisma.TransactionClient, spec: ConfigTable): Delegate => (db as unknown as Record<string, Delegate>)[spec.entity.model]!;
const selectOf = (spec: ConfigTable) => Object.fromEntries(wireColumns(spec).map((c) => [prismaField(c), true]));

const toRow = (spec: ConfigTable, row: Record<string, unknown>): ConfigRow => {
  const out: Record<string, unknown> = {};
  for (const column of wireColumns(spec)) {
    const value = row[prismaField(column)];
    out[column] = value instanceof Date ? value.toISOString() : value;
  }
  return out as ConfigRow;
};
const toData = (values: ReadonlyArray<[string, unknown]>) => Object.fromEntries(values.map(([c, v]) => [prismaField(c), v]));

/** Every row of a control-plane table, by id. */
export const listConfig = async (db: ControlDb, type: ConfigObjectType): Promise<ConfigRow[]> => {
  const spec = CONFIG_TABLES[type];
  const rows = await delegate(db, spec).findMany({ select: selectOf(spec), orderBy: { id: "asc" } });
  return rows.map((r) => toRow(spec, r));
};

/** One row, or null. */
export const getConfig = async (db: ControlTx, type: ConfigObjectType, id: string): Promise<ConfigRow | null> => {
  const spec = CONFIG_TABLES[type];
  const row = await delegate(db, spec).findUnique({ where: { id }, select: selectOf(spec) });
  return row ? toRow(spec, row) : null;
};

const pick = (spec: ConfigTable, values: Record<string, unknown>): Array<[string, unknown]> =>
  spec.columns.filter((c) => values[c] !== undefined).map((c) => [c, values[c]]);

const auditable = (spec: ConfigTable, row: ConfigRow): Record<string, unknown> =>
  Object.fromEntries(["id", ...spec.columns, ...spec.readOnly].map((c) => [c, row[c]]));

/** The PostgreSQL error under a Prisma error (driver adapters keep it in `meta.driverAdapterError.cause`). */
type PgCause = { originalCode?: string; constraint?: { index?: string }; message?: string };
const pgCauseOf = (error: unknown): PgCause =>
  ((error as { meta?: { driverAdapterError?: { cause?: PgCause } } }).meta?.driverAdapterError?.cause ?? {}) as PgCause;

/**
 * Maps a constraint violation of a control-plane write (Prisma's P2002/P2003/…, the pg code
 * underneath) to an AppError a form can show: an unknown reference (pool, queue, resource key) is
 * a 400 on that field, a duplicate id a 409, a failed CHECK a 400. Anything else is rethrown.
 */
const asConfigError = (error: unknown, spec: ConfigTable, id: string): never => {
  const code = (error as { code?: string }).code;
  const cause = pgCauseOf(error);
  const pgCode = cause.originalCode;
  // Unique and foreign-key violations name their constraint; a CHECK's name is only in the message.
  const constraint = cause.constraint?.index ?? /constraint "([^"]+)"/.exec(cause.message ?? "")?.[1];
  if (code === "P2002" || pgCode === "23505") {
    throw new AppError("CONFLICT", { message: `${spec.objectType} ${id} already exists`, details: { issues: [{ path: ["id"], message: "already exists" }] } });
  }
  if (code === "P2003" || pgCode === "23503") {
    // `queues_pool_id_fkey` → `pool_id`; a constraint of another table means this row is referenced.
    const column = constraint?.startsWith(`${spec.table}_`) ? constraint.slice(spec.table.length + 1).replace(/_fkey$/, "") : undefined;
    const field = column && spec.columns.includes(column) ? column : undefined;
    throw new AppError("BAD_REQUEST", {
      message: field ? `${field}: unknown ${field.replace(/_id$/, "").replace(/_/g, " ")}` : `${spec.objectType} ${id} is still referenced`,
      details: { issues: [{ path: field ? [field] : ["id"], message: field ? "does not exist" : "still referenced" }] },
    });
  }
  if (pgCode === "23514" || pgCode === "22003" || pgCode === "23502" || code === "P2011" || code === "P2020") {
    throw new AppError("BAD_REQUEST", { message: `invalid ${spec.objectType}: ${constraint ?? cause.message ?? "a value is out of range"}` });
  }
  throw error;
};

const refuseIssues = (spec: ConfigTable, row: Record<string, unknown>): void => {
  const issues: FieldIssue[] = spec.entity.issues?.(row) ?? [];
  if (issues.length === 0) return;
  throw new AppError("BAD_REQUEST", {
    message: `invalid ${spec.objectType}: ${issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}`,
    details: { issues },
  });
};

/** Options shared by create and update. */
export type ConfigWriteOptions = { actor: string; reason?: string };

/**
 * Creates a control-plane row from the table's writable columns (absent ones take the column
 * default) and appends a `<type>.create` audit row with the new values, in one transaction.
 * The entity's cross-field rules refuse it first (400). A duplicate id is a 409; an unknown
 * reference a 400 naming the field.
 */
export const createConfig = async (
  db: ControlTx,
  type: ConfigObjectType,
  values: Record<string, unknown> & { id: string },
  options: ConfigWriteOptions,
): Promise<ConfigRow> => {
  const spec = CONFIG_TABLES[type];
  refuseIssues(spec, values);
  return db.$transaction(async (tx) => {
    let row: ConfigRow;
    try {
      row = toRow(spec, await delegate(tx, spec).create({ data: { id: values.id, ...toData(pick(spec, values)) }, select: selectOf(spec) }));
    } catch (error) {
      return asConfigError(error, spec, values.id);
    }
    await writeAuditTx(tx, [
      {
        actor: options.actor,
        action: `${spec.objectType}.create`,
        objectType: spec.objectType,
        objectId: row.id,
        after: auditable(spec, row),
        reason: options.reason ?? null,
      },
    ]);
    return row;
  });
};

/**
 * Applies a patch of writable columns to a control-plane row (locked while it is merged and
 * validated against the entity's cross-field rules) and appends a `<type>.update` audit row with
 * the changed fields before → after, in one transaction. A patch that changes nothing writes
 * nothing. Unknown id: 404.
 */
export const updateConfig = async (
  db: ControlDb,
  type: ConfigObjectType,
  id: string,
  patch: Record<string, unknown>,
  options: ConfigWriteOptions,
): Promise<ConfigRow> => {
  const spec = CONFIG_TABLES[type];
  return db.$transaction(async (tx) => {
    // The table name comes from the declaration, never from input.
    await tx.$executeRawUnsafe(`SELECT 1 FROM ${spec.table} WHERE id = $1 FOR UPDATE`, id);
    const current = await delegate(tx, spec).findUnique({ where: { id }, select: selectOf(spec) });
    if (!current) throw new AppError("NOT_FOUND", { message: `${spec.objectType} ${id} not found` });
    const before = toRow(spec, current);
    const changed = pick(spec, patch).filter(([c, v]) => JSON.stringify(before[c]) !== JSON.stringify(v));
    refuseIssues(spec, { ...before, ...Object.fromEntries(pick(spec, patch)) });
    if (changed.length === 0) return before;
    let after: ConfigRow;
    try {
      const [{ now }] = await tx.$queryRaw<[{ now: Date }]>`SELECT now()`;
      after = toRow(spec, await delegate(tx, spec).update({ where: { id }, data: { ...toData(changed), updatedAt: now }, select: selectOf(spec) }));
    } catch (error) {
      return asConfigError(error, spec, id);
    }
    await writeAuditTx(tx, [
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
