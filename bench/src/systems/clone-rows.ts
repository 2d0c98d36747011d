import type pg from "pg";

/**
 * Appends `count` rows to `table` with one INSERT … SELECT over generate_series(from, …) per chunk:
 * each column takes its `overrides` expression (which may use `g`, the row's number), else the
 * template row's value, else its default (serial ids, generated columns). The template is a row the
 * system stored through its own API, so the copies are in the system's own format.
 */
export const cloneRows = async (
  db: pg.Pool,
  params: { table: string; template: string; overrides: Record<string, string>; from: number; count: number; chunk?: number },
): Promise<void> => {
  const [schema, name] = params.table.includes(".") ? params.table.split(".") : ["public", params.table];
  const { rows: columns } = await db.query<{ column_name: string; column_default: string | null; is_generated: string; is_identity: string }>(
    `SELECT column_name, column_default, is_generated, is_identity FROM information_schema.columns
      WHERE table_schema = $1 AND table_name = $2 ORDER BY ordinal_position`,
    [schema, name],
  );
  if (columns.length === 0) throw new Error(`table ${params.table} not found`);
  const { fields } = await db.query(`SELECT * FROM (${params.template}) t LIMIT 0`);
  const templateColumns = new Set(fields.map((f) => f.name));
  const target: string[] = [];
  const exprs: string[] = [];
  for (const c of columns) {
    const override = params.overrides[c.column_name];
    // Generated, identity and serial columns fill themselves.
    const isSelfFilled = c.is_generated === "ALWAYS" || c.is_identity === "YES" || c.column_default?.startsWith("nextval(");
    if (override !== undefined) {
      target.push(`"${c.column_name}"`);
      exprs.push(override);
    } else if (!isSelfFilled && templateColumns.has(c.column_name)) {
      target.push(`"${c.column_name}"`);
      exprs.push(`t."${c.column_name}"`);
    }
  }
  const unknown = Object.keys(params.overrides).filter((k) => !columns.some((c) => c.column_name === k));
  if (unknown.length) throw new Error(`${params.table} has no column(s) ${unknown.join(", ")}`);
  const chunk = params.chunk ?? 100_000;
  for (let start = params.from; start < params.from + params.count; start += chunk) {
    const end = Math.min(params.from + params.count, start + chunk) - 1;
    await db.query(
      `INSERT INTO ${params.table} (${target.join(", ")})
       SELECT ${exprs.join(", ")} FROM (${params.template}) t CROSS JOIN generate_series($1::int, $2::int) AS g`,
      [start, end],
    );
  }
};

/** A uuid derived from a row number, so rows of two tables can refer to each other. */
export const uuidOf = (g = "g", prefix = "b0000000"): string => `('${prefix}-0000-4000-8000-' || lpad(to_hex(${g}), 12, '0'))::uuid`;
