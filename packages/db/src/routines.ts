// Routines: every function and trigger of the database, kept as current source in
// packages/core/src/sql/routines/*.sql (one file per concern, idempotent: CREATE OR REPLACE) rather
// than in migrations. The migrator (migrator.ts) applies them after the schema migrations, under
// its advisory lock: a file whose checksum changed is run again, in a transaction of its own, and
// what it created is recorded, so that an object a file no longer creates (a function removed, or
// an overload left behind by a signature change) is dropped, and so is everything of a file
// removed from source. routineDrift() compares a database with the files (the drift test).
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type pg from "pg";
import { MigrationError, reasonOf, sqlChecksum } from "./ledger";

/** The ledger of applied routine files: name, checksum, and the objects the file created. */
export const ROUTINES_TABLE = "_porter_routines";

/** One routine file: `<routinesDir>/<name>`, e.g. `claim.sql`. */
export type RoutineFile = {
  /** File name, e.g. `claim.sql`; routines apply in this name's order. */
  name: string;
  sql: string;
  /** sha256 (hex) of the SQL with line endings normalised to `\n`. */
  checksum: string;
};

/** What {@link applyRoutines} did: files run now, files unchanged, objects dropped (`FUNCTION public.f(n integer)`, `TRIGGER t ON public.tbl`). */
export type RoutinesResult = { applied: string[]; skipped: number; dropped: string[] };

/** Reported once per routine file (applied or skipped), and once per routine file removed from source. */
export type RoutineProgress = {
  kind: "routine";
  name: string;
  /** `applied` now, `skipped` (checksum unchanged), or `dropped`: the file is gone, and so are its objects. */
  status: "applied" | "skipped" | "dropped";
  durationMs: number;
};

/** The repository's `packages/core/src/sql/routines`, found relative to this file (a path: packages/db imports no core code). */
export function defaultRoutinesDir(): string {
  return fileURLToPath(new URL("../../core/src/sql/routines", import.meta.url));
}

/** Reads every `<dir>/*.sql`, sorted by name; anything else in the folder (tests, notes) is ignored. */
export async function readRoutines(routinesDir: string): Promise<RoutineFile[]> {
  const entries = await readdir(routinesDir, { withFileTypes: true });
  const names = entries
    .filter((entry) => entry.isFile() && entry.name.endsWith(".sql"))
    .map((entry) => entry.name)
    .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const files: RoutineFile[] = [];
  for (const name of names) {
    const sql = await readFile(join(routinesDir, name), "utf8");
    files.push({ name, sql, checksum: sqlChecksum(sql) });
  }
  return files;
}

// Objects are named as the targets of a DROP, schema-qualified whatever the search_path:
// `FUNCTION public.porter_tokens(p_tokens double precision, …)`, `TRIGGER audit_log_stamp ON public.audit_log`.
const FUNCTION_NAME = `format('FUNCTION %I.%I(%s)', 'public', p.proname, pg_get_function_identity_arguments(p.oid))`;
const TRIGGER_NAME = `format('TRIGGER %I ON public.%I', t.tgname, c.relname)`;

// The objects of schema `public` a statement of this transaction created or replaced: a CREATE OR
// REPLACE writes a new catalog row even when nothing changed, so the row's xmin is this
// transaction's id.
const TOUCHED_SQL = `
  SELECT ${FUNCTION_NAME} AS object FROM pg_proc p
   WHERE p.pronamespace = 'public'::regnamespace AND p.xmin = pg_current_xact_id()::xid
  UNION ALL
  SELECT ${TRIGGER_NAME} FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
   WHERE NOT t.tgisinternal AND t.tgparentid = 0 AND c.relnamespace = 'public'::regnamespace AND t.xmin = pg_current_xact_id()::xid`;

// Every function and trigger of schema `public` with its full definition; extension members are not Porter's.
// A trigger on a partitioned table is cloned onto each partition (tgparentid names the parent's):
// the clones come and go with the partitions and are not the file's objects, here or above.
const DEFINITIONS_SQL = `
  SELECT ${FUNCTION_NAME} AS object, pg_get_functiondef(p.oid) AS definition FROM pg_proc p
   WHERE p.pronamespace = 'public'::regnamespace
     AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e')
  UNION ALL
  SELECT ${TRIGGER_NAME}, pg_get_triggerdef(t.oid) FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
   WHERE NOT t.tgisinternal AND t.tgparentid = 0 AND c.relnamespace = 'public'::regnamespace`;

async function touchedObjects(client: pg.ClientBase): Promise<string[]> {
  return (await client.query<{ object: string }>(TOUCHED_SQL)).rows.map((row) => row.object).sort();
}

async function definitions(client: pg.ClientBase): Promise<Map<string, string>> {
  const { rows } = await client.query<{ object: string; definition: string }>(DEFINITIONS_SQL);
  return new Map(rows.map((row) => [row.object, row.definition]));
}

/**
 * Creates the routines ledger if missing, then runs every file whose checksum differs from its
 * ledger row (or that has none), in name order, each in its own transaction together with its
 * ledger row (name, checksum, the objects it created). Then drops, each file in one transaction,
 * what the ledger says a file created and no current file creates any more: the objects of a file
 * removed from source (its ledger row goes too), and those a changed file no longer creates.
 * Triggers are dropped before functions; a function something still depends on makes the drop
 * fail (no CASCADE), naming the file. Runs on the migrator's connection, under its lock.
 */
export async function applyRoutines(client: pg.ClientBase, files: RoutineFile[], onProgress?: (event: RoutineProgress) => void): Promise<RoutinesResult> {
  await client.query(`CREATE TABLE IF NOT EXISTS ${ROUTINES_TABLE} (
    name       text PRIMARY KEY,
    checksum   text NOT NULL,
    objects    text[] NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
  )`);
  const ledger = await client.query<{ name: string; checksum: string; objects: string[] }>(
    `SELECT name, checksum, objects FROM ${ROUTINES_TABLE} ORDER BY name`,
  );
  const before = new Map(ledger.rows.map((row) => [row.name, row]));
  const now = new Map(ledger.rows.map((row) => [row.name, row.objects]));
  const result: RoutinesResult = { applied: [], skipped: 0, dropped: [] };

  for (const file of files) {
    if (before.get(file.name)?.checksum === file.checksum) {
      result.skipped += 1;
      onProgress?.({ kind: "routine", name: file.name, status: "skipped", durationMs: 0 });
      continue;
    }
    const started = performance.now();
    const objects = await inTransaction(client, `routine ${file.name} failed`, file.name, async () => {
      // No parameters: pg sends it as a simple query, so the file may hold many statements.
      await client.query(file.sql);
      const created = await touchedObjects(client);
      await client.query(
        `INSERT INTO ${ROUTINES_TABLE} (name, checksum, objects) VALUES ($1, $2, $3)
         ON CONFLICT (name) DO UPDATE SET checksum = EXCLUDED.checksum, objects = EXCLUDED.objects, applied_at = now()`,
        [file.name, file.checksum, created],
      );
      return created;
    });
    now.set(file.name, objects);
    result.applied.push(file.name);
    onProgress?.({ kind: "routine", name: file.name, status: "applied", durationMs: Math.round(performance.now() - started) });
  }

  // Drops come last: an object moved from one file to another is never absent in between.
  const onDisk = new Set(files.map((file) => file.name));
  const current = new Set([...now].filter(([name]) => onDisk.has(name)).flatMap(([, objects]) => objects));
  for (const [name, row] of before) {
    const stale = row.objects.filter((object) => !current.has(object));
    const isRemoved = !onDisk.has(name);
    if (stale.length === 0 && !isRemoved) continue;
    const started = performance.now();
    // Triggers first: a trigger function cannot be dropped while a trigger uses it.
    stale.sort((a, b) => Number(a.startsWith("FUNCTION ")) - Number(b.startsWith("FUNCTION ")));
    await inTransaction(client, `routine ${name}: dropping what it no longer creates failed`, name, async () => {
      for (const object of stale) await client.query(`DROP ${object}`);
      if (isRemoved) await client.query(`DELETE FROM ${ROUTINES_TABLE} WHERE name = $1`, [name]);
    });
    result.dropped.push(...stale);
    if (isRemoved) onProgress?.({ kind: "routine", name, status: "dropped", durationMs: Math.round(performance.now() - started) });
  }
  return result;
}

async function inTransaction<T>(client: pg.ClientBase, what: string, name: string, fn: () => Promise<T>): Promise<T> {
  await client.query("BEGIN");
  try {
    const value = await fn();
    await client.query("COMMIT");
    return value;
  } catch (error) {
    await client.query("ROLLBACK").catch(() => {});
    throw new MigrationError(`${what}: ${reasonOf(error)}`, { migration: `routines/${name}`, cause: error });
  }
}

/** How a database's functions and triggers differ from the routine files. Empty lists: none. */
export type RoutineDrift = {
  /** Created by a file, but defined differently in the database (pg_get_functiondef, pg_get_triggerdef). */
  changed: string[];
  /** Created by a file, but absent from the database. */
  missing: string[];
  /** In the database (schema public, extensions aside), but created by no file. */
  unknown: string[];
};

/**
 * Compares the functions and triggers of the database with what `files` create: reads every
 * definition, runs the files in a transaction, reads them again, and rolls back (the database is
 * left as it was; the files' CREATE OR REPLACE TRIGGER briefly locks their tables against writes).
 * A database migrated from these files has no drift; a function edited by hand, one a migration
 * created, or a file changed without migrating shows up here.
 */
export async function routineDrift(client: pg.ClientBase, files: RoutineFile[]): Promise<RoutineDrift> {
  const inDatabase = await definitions(client);
  const drift: RoutineDrift = { changed: [], missing: [], unknown: [] };
  await client.query("BEGIN");
  try {
    const created = new Set<string>();
    for (const file of files) {
      await client.query(file.sql);
      for (const object of await touchedObjects(client)) created.add(object);
    }
    const fromSource = await definitions(client);
    for (const object of [...created].sort()) {
      const definition = inDatabase.get(object);
      if (definition === undefined) drift.missing.push(object);
      else if (definition !== fromSource.get(object)) drift.changed.push(object);
    }
    drift.unknown = [...inDatabase.keys()].filter((object) => !created.has(object)).sort();
  } finally {
    await client.query("ROLLBACK");
  }
  return drift;
}
