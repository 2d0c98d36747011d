// The migrated database's column DEFAULTs, nullability and types are the schema's own; the
// declarations in @porter/contracts/control-plane restate the defaults for forms and inputs. This
// test reads information_schema of a migrated database and fails when the two disagree.
import { CONTROL_PLANE, type EntityDecl, type FieldDecl } from "@porter/contracts/control-plane";
import { useTestDatabase } from "@porter/db/testing/test-database";
import { describe, expect, it } from "vitest";

const db = useTestDatabase();

type Column = { column_name: string; column_default: string | null; is_nullable: "YES" | "NO"; data_type: string };
const columnsOf = async (table: string): Promise<Map<string, Column>> => {
  const { rows } = await db.pool.query<Column>(
    `SELECT column_name, column_default, is_nullable, data_type FROM information_schema.columns WHERE table_schema = 'public' AND table_name = $1`,
    [table],
  );
  return new Map(rows.map((r) => [r.column_name, r]));
};
/** The value of a column's DEFAULT expression, evaluated by the database (`''::text` → ""). */
const evaluate = async (expression: string): Promise<unknown> => (await db.pool.query<{ v: unknown }>(`SELECT (${expression}) AS v`)).rows[0]!.v;

const TYPE_OF: Record<FieldDecl["kind"], string> = {
  int: "integer",
  rate: "double precision",
  text: "text",
  textarea: "text",
  enum: "text",
  ref: "text",
  origins: "ARRAY",
  color: "text",
};

describe.each(Object.values(CONTROL_PLANE) as EntityDecl[])("$table", (entity) => {
  it("each declared default, nullability and type is the migrated column's", async () => {
    const columns = await columnsOf(entity.table);
    for (const [name, field] of Object.entries(entity.fields)) {
      const column = columns.get(name);
      expect(column, `${entity.table}.${name} exists`).toBeDefined();
      expect(column!.data_type, `${entity.table}.${name} type`).toBe(TYPE_OF[field.kind]);
      expect(column!.is_nullable === "YES", `${entity.table}.${name} nullable`).toBe("isNullable" in field && Boolean(field.isNullable));
      const dbDefault = column!.column_default === null ? null : await evaluate(column!.column_default);
      expect(dbDefault, `${entity.table}.${name} default`).toEqual(field.default);
    }
    for (const [name, state] of Object.entries(entity.state ?? {})) {
      expect(columns.get(name)?.is_nullable === "YES", `${entity.table}.${name} nullable`).toBe(Boolean(state.isNullable));
    }
  });
});
