// Compares prisma/schema.prisma (parsed by ./prisma-schema) with a migrated database, so the
// Prisma client's idea of the tables and the SQL migrations cannot drift apart unnoticed. Kept now
// that the control plane runs on the Prisma Client: a column a migration renamed or retyped would
// otherwise fail only when a console page or CLI command first queries it, and the generated
// client's own data model carries no nullability, native types or indexes to compare instead.
import type { Queryable } from "../pool";
import type { PrismaField, PrismaSchema } from "./prisma-schema";

export type DbColumn = { name: string /** `format_type()`, e.g. `timestamp(6) with time zone` */; type: string; isNullable: boolean };
export type DbIndex = { name: string; columns: string[]; isUnique: boolean; isPrimary: boolean; isPartial: boolean };
export type DbTable = { name: string; columns: DbColumn[]; indexes: DbIndex[] };
export type DbEnum = { name: string; labels: string[] };
/** The parts of a database's catalog the drift check compares. */
export type DatabaseSchema = { tables: DbTable[]; enums: DbEnum[] };

/**
 * Reads tables (except those starting with `_`, Porter's bookkeeping, and partitions: a partitioned
 * table is one model, its partitions and their indexes copies of it), their columns and
 * indexes, and enum types of `schema` from pg_catalog.
 */
export async function readDatabaseSchema(db: Queryable, schema = "public"): Promise<DatabaseSchema> {
  const columns = await db.query<{ table: string; column: string; type: string; not_null: boolean }>(
    `SELECT c.relname AS table, a.attname AS column, format_type(a.atttypid, a.atttypmod) AS type,
            a.attnotnull AS not_null
       FROM pg_class c
       JOIN pg_namespace n ON n.oid = c.relnamespace
       JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
      WHERE n.nspname = $1 AND c.relkind IN ('r', 'p') AND NOT c.relispartition AND left(c.relname, 1) <> '_'
      ORDER BY c.relname, a.attnum`,
    [schema],
  );
  const indexes = await db.query<{
    table: string;
    name: string;
    columns: (string | null)[];
    is_unique: boolean;
    is_primary: boolean;
    is_partial: boolean;
  }>(
    `SELECT t.relname AS table, i.relname AS name, i.indisunique AS is_unique, i.indisprimary AS is_primary,
            (i.indpred IS NOT NULL) AS is_partial,
            ARRAY(SELECT a.attname::text FROM unnest(i.indkey) WITH ORDINALITY AS k(attnum, ord)
                    LEFT JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.attnum
                   ORDER BY k.ord) AS columns
       FROM (SELECT x.*, ic.relname FROM pg_index x JOIN pg_class ic ON ic.oid = x.indexrelid) i
       JOIN pg_class t ON t.oid = i.indrelid
       JOIN pg_namespace n ON n.oid = t.relnamespace
      WHERE n.nspname = $1 AND NOT t.relispartition AND left(t.relname, 1) <> '_'
      ORDER BY t.relname, i.relname`,
    [schema],
  );
  const enums = await db.query<{ name: string; labels: string[] }>(
    `SELECT t.typname AS name, array_agg(e.enumlabel::text ORDER BY e.enumsortorder) AS labels
       FROM pg_type t
       JOIN pg_namespace n ON n.oid = t.typnamespace
       JOIN pg_enum e ON e.enumtypid = t.oid
      WHERE n.nspname = $1
      GROUP BY t.typname ORDER BY t.typname`,
    [schema],
  );

  const tables = new Map<string, DbTable>();
  const table = (name: string) => {
    let found = tables.get(name);
    if (!found) {
      found = { name, columns: [], indexes: [] };
      tables.set(name, found);
    }
    return found;
  };
  for (const row of columns.rows) {
    table(row.table).columns.push({ name: row.column, type: row.type, isNullable: !row.not_null });
  }
  for (const row of indexes.rows) {
    table(row.table).indexes.push({
      name: row.name,
      // An expression column (attnum 0) has no name: such an index never matches a schema index.
      columns: row.columns.map((column) => column ?? "(expression)"),
      isUnique: row.is_unique,
      isPrimary: row.is_primary,
      isPartial: row.is_partial,
    });
  }
  return { tables: [...tables.values()], enums: enums.rows };
}

/**
 * Lists every difference between the schema and the database, as sentences naming the table,
 * column, enum or index; empty when they agree. Checks: the set of tables, each table's
 * columns with type and nullability, enum types and their labels in order, and that every
 * `@id`/`@@id`, `@unique`/`@@unique` and `@@index` has a matching (non-partial) index. Extra
 * database indexes are allowed: partial indexes cannot be expressed in Prisma.
 */
export function diffSchema(schema: PrismaSchema, db: DatabaseSchema): string[] {
  const problems: string[] = [];
  const enumTypes = new Map(schema.enums.map((enumeration) => [enumeration.name, enumeration.dbName]));
  const dbTables = new Map(db.tables.map((table) => [table.name, table]));
  const schemaTables = new Set(schema.models.map((model) => model.table));

  for (const model of schema.models) {
    const table = dbTables.get(model.table);
    if (!table) {
      problems.push(`table ${model.table} (model ${model.name}) is missing in the database`);
      continue;
    }
    const dbColumns = new Map(table.columns.map((column) => [column.name, column]));
    const fields = model.fields.filter((field) => !field.isRelation);
    for (const field of fields) {
      const where = `${model.table}.${field.column} (${model.name}.${field.name})`;
      const column = dbColumns.get(field.column);
      if (!column) {
        problems.push(`column ${where} is missing in the database`);
        continue;
      }
      const expected = expectedType(field, enumTypes);
      if ("problem" in expected) problems.push(`column ${where}: ${expected.problem}`);
      else if (!expected.matches(column.type.replaceAll('"', ""))) {
        problems.push(`column ${where} has type ${column.type} in the database, the schema says ${expected.label}`);
      }
      if (column.isNullable !== field.isOptional) {
        problems.push(
          `column ${where} is ${column.isNullable ? "nullable" : "NOT NULL"} in the database, `
            + `the schema says ${field.isOptional ? "optional (nullable)" : "required (NOT NULL)"}`,
        );
      }
    }
    const fieldColumns = new Set(fields.map((field) => field.column));
    for (const column of table.columns) {
      if (!fieldColumns.has(column.name)) {
        problems.push(`column ${model.table}.${column.name} exists in the database but not in model ${model.name}`);
      }
    }
    const columnOf = new Map(model.fields.map((field) => [field.name, field.column]));
    for (const index of model.indexes) {
      const columns = index.fields.map((field) => columnOf.get(field) ?? `?${field}`);
      const found = table.indexes.some(
        (candidate) =>
          !candidate.isPartial
          && candidate.columns.join(",") === columns.join(",")
          && (index.kind !== "id" || candidate.isPrimary)
          && (index.kind !== "unique" || candidate.isUnique),
      );
      if (!found) {
        const kind = { id: "primary key", unique: "unique index", index: "index" }[index.kind];
        problems.push(`${kind} on ${model.table} (${columns.join(", ")}) is missing in the database`);
      }
    }
  }
  for (const table of db.tables) {
    if (!schemaTables.has(table.name)) problems.push(`table ${table.name} exists in the database but has no model`);
  }

  const dbEnums = new Map(db.enums.map((enumeration) => [enumeration.name, enumeration]));
  for (const enumeration of schema.enums) {
    const found = dbEnums.get(enumeration.dbName);
    if (!found) problems.push(`enum type ${enumeration.dbName} (enum ${enumeration.name}) is missing in the database`);
    else if (found.labels.join(",") !== enumeration.values.join(",")) {
      problems.push(
        `enum type ${enumeration.dbName} has labels [${found.labels.join(", ")}] in the database, ` + `the schema says [${enumeration.values.join(", ")}]`,
      );
    }
  }
  const schemaEnums = new Set(schema.enums.map((enumeration) => enumeration.dbName));
  for (const enumeration of db.enums) {
    if (!schemaEnums.has(enumeration.name)) problems.push(`enum type ${enumeration.name} exists in the database but not in the schema`);
  }
  return problems;
}

type ExpectedType = { label: string; matches: (dbType: string) => boolean } | { problem: string };

/** The PostgreSQL type a field must have, per Prisma's mapping and Porter's conventions. */
function expectedType(field: PrismaField, enumTypes: Map<string, string>): ExpectedType {
  const native = field.nativeType;
  const nativeLabel = native ? `@db.${native.name}${native.args.length ? `(${native.args.join(", ")})` : ""}` : "";
  let base: string | RegExp | undefined;
  const enumType = enumTypes.get(field.type);
  if (enumType !== undefined) base = enumType;
  else if (field.type === "DateTime") {
    if (native?.name !== "Timestamptz") {
      return { problem: `DateTime must be declared @db.Timestamptz (every Porter timestamp is timestamptz), found ${nativeLabel || "no @db attribute"}` };
    }
    base = native.args[0] ? `timestamp(${native.args[0]}) with time zone` : /^timestamp(\(\d\))? with time zone/;
  } else {
    const key = `${field.type}${native ? `@${native.name}` : ""}`;
    const mapping: Record<string, string> = {
      String: "text",
      "String@Text": "text",
      "String@Uuid": "uuid",
      Int: "integer",
      "Int@Integer": "integer",
      BigInt: "bigint",
      "BigInt@BigInt": "bigint",
      Boolean: "boolean",
      Float: "double precision",
      "Float@DoublePrecision": "double precision",
      // Unbounded numeric (flow_totals' exact sums).
      Decimal: "numeric",
      "Decimal@Decimal": "numeric",
      Json: "jsonb",
      "Json@JsonB": "jsonb",
      "Json@Json": "json",
      Bytes: "bytea",
      "String@VarChar": `character varying(${native?.args[0] ?? ""})`,
      // Types Prisma has none for (the model is @@ignore'd; core reads it with raw SQL).
      'Unsupported("cidr")': "cidr",
      // A type Prisma has no mapping for, declared as is (job_stream.xid).
      'Unsupported("xid8")': "xid8",
    };
    base = mapping[key];
    if (base === undefined) return { problem: `the drift check does not know type ${field.type} ${nativeLabel}; extend schema-drift.ts` };
  }
  const suffix = field.isList ? "[]" : "";
  if (typeof base === "string") {
    const label = base + suffix;
    return { label, matches: (dbType) => dbType === label };
  }
  const pattern = new RegExp(`${base.source}${field.isList ? "\\[\\]" : ""}$`);
  return { label: `timestamp with time zone${suffix}`, matches: (dbType) => pattern.test(dbType) };
}
