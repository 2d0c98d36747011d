import { defaultRoutinesDir, type RoutineFile, readRoutines, routineDrift } from "@porter/db/routines";
import { useTestDatabase } from "@porter/db/testing/test-database";
import type pg from "pg";
import { beforeAll, describe, expect, it, onTestFinished } from "vitest";

// The routine files of this folder are the one source of the database's functions and triggers.
// This file fails when a migrated database's routine (pg_get_functiondef, pg_get_triggerdef)
// differs from its file, when the database has a function or trigger no file creates (one a
// migration made, or one made by hand), or when a file's object is missing.
const db = useTestDatabase();
let files: RoutineFile[];

beforeAll(async () => {
  files = await readRoutines(defaultRoutinesDir());
});

async function client(): Promise<pg.PoolClient> {
  const c = await db.pool.connect();
  onTestFinished(() => c.release());
  return c;
}

const NO_DRIFT = { changed: [], missing: [], unknown: [] };
const source = (name: string): string => {
  const file = files.find((f) => f.name === name);
  if (!file) throw new Error(`no routine file ${name}`);
  return file.sql;
};

describe("routines: the migrated database matches packages/core/src/sql/routines", () => {
  it("has every function and trigger of the files, defined as they are, and nothing else", async () => {
    expect(files.map((f) => f.name)).toEqual([
      "aging.sql",
      "audit.sql",
      "authenticate-key.sql",
      "claim.sql",
      "dlq.sql",
      "effects.sql",
      "partitions.sql",
      "redrive.sql",
      "stream.sql",
      "tokens.sql",
      "webhooks.sql",
    ]);
    expect(await routineDrift(await client(), files)).toEqual(NO_DRIFT);
    // Every file creates something (a file whose statements create nothing is a mistake).
    const { rows } = await db.pool.query<{ name: string; n: number }>("SELECT name, cardinality(objects) AS n FROM _porter_routines ORDER BY name");
    expect(rows.map((r) => r.name)).toEqual(files.map((f) => f.name));
    for (const row of rows) expect(row.n).toBeGreaterThan(0);
  });
});

describe("routines: the drift check fails when it should", () => {
  it("names a function edited in the database, and is clean once the file is applied again", async () => {
    const c = await client();
    await c.query(source("tokens.sql").replace("WHEN p_tokens IS NULL THEN p_burst", "WHEN p_tokens IS NULL THEN p_burst - 1"));
    expect(await routineDrift(c, files)).toEqual({
      ...NO_DRIFT,
      changed: [expect.stringMatching(/^FUNCTION public\.porter_tokens\(/)],
    });
    await c.query(source("tokens.sql"));
    expect(await routineDrift(c, files)).toEqual(NO_DRIFT);
  });

  it("names a source file changed after the database was migrated (a comment inside the body counts)", async () => {
    const edited = files.map((f) => (f.name === "claim.sql" ? { ...f, sql: f.sql.replace("BEGIN\n", "BEGIN\n  -- a new comment\n") } : f));
    expect(edited.find((f) => f.name === "claim.sql")?.sql).not.toBe(source("claim.sql"));
    expect(await routineDrift(await client(), edited)).toEqual({
      ...NO_DRIFT,
      changed: [expect.stringMatching(/^FUNCTION public\.porter_claim_rows\(/)], // the first body of the file
    });
  });

  it("names a function or trigger that no file creates, and one the database lacks", async () => {
    const c = await client();
    await c.query("CREATE FUNCTION porter_orphan() RETURNS int LANGUAGE sql AS $$ SELECT 1 $$");
    await c.query("DROP TRIGGER audit_log_stamp ON audit_log");
    await c.query("CREATE TRIGGER audit_log_extra BEFORE INSERT ON audit_log FOR EACH ROW EXECUTE FUNCTION audit_log_stamp()");
    try {
      expect(await routineDrift(c, files)).toEqual({
        changed: [],
        missing: ["TRIGGER audit_log_stamp ON public.audit_log"],
        unknown: ["FUNCTION public.porter_orphan()", "TRIGGER audit_log_extra ON public.audit_log"],
      });
    } finally {
      await c.query("DROP FUNCTION porter_orphan(); DROP TRIGGER audit_log_extra ON audit_log");
      await c.query(source("audit.sql"));
    }
    expect(await routineDrift(c, files)).toEqual(NO_DRIFT);
  });
});
