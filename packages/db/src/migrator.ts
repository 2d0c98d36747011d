import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { MigrationError, reasonOf, sqlChecksum } from "./ledger";
import { applyRoutines, defaultRoutinesDir, type RoutineProgress, type RoutinesResult, readRoutines } from "./routines";
import { applyRuntimeRole, type RuntimeRoleResult, type RuntimeRoleSpec } from "./runtime-role";

export { MigrationError } from "./ledger";

/**
 * Key of the session advisory lock every migrator takes before reading the ledger, so that
 * concurrent migrators (two deploys, a CI job and a developer) apply each file exactly once.
 * It is the bytes of "porter" read as a big-endian integer.
 */
export const MIGRATION_LOCK_KEY = "123740543166834";

/** The ledger of applied migrations; tables starting with `_` are Porter's own bookkeeping. */
export const MIGRATIONS_TABLE = "_porter_migrations";

/** One migration on disk: `<migrationsDir>/<name>/migration.sql`. */
export type MigrationFile = {
  /** Directory name, e.g. `20261130000000_init`; migrations apply in this name's order. */
  name: string;
  sql: string;
  /** sha256 (hex) of the SQL with line endings normalised to `\n`. */
  checksum: string;
  /**
   * The migrations this one squashes (`<migrationsDir>/<name>/replaces`, one name a line): a
   * database whose ledger has all of them gets this one recorded as applied without running it.
   */
  replaces: string[];
};

/**
 * Reported by {@link migrate} once per migration file, in the order the files are processed, then
 * once per routine file (`kind: "routine"`, see routines.ts).
 */
export type MigrationProgress =
  | {
      kind: "migration";
      name: string;
      /**
       * `applied` now; `skipped`: the ledger already has it with the same checksum; `recorded`: the
       * ledger has every migration it replaces, so it is recorded as applied without running.
       */
      status: "applied" | "skipped" | "recorded";
      durationMs: number;
    }
  | RoutineProgress;

/** One line of progress for a person (the CLI's `migrate`, `npm start`). */
export function describeProgress(event: MigrationProgress): string {
  const what = event.kind === "routine" ? `routine ${event.name}` : event.name;
  switch (event.status) {
    case "applied":
      return `  applied ${what} (${event.durationMs} ms)`;
    case "recorded":
      return `  recorded ${what} as applied (the database has every migration it replaces)`;
    case "dropped":
      return `  dropped ${what} (removed from source) and what it created`;
    default:
      return `  up to date ${what}`;
  }
}

/** Options of {@link migrate}. */
export type MigrateOptions = {
  /** Directory holding `<name>/migration.sql`. Default: the repository's `prisma/migrations`. */
  migrationsDir?: string;
  /**
   * Directory of the routine files (`*.sql`), applied after the migrations. Default: the
   * repository's `packages/core/src/sql/routines`. `false`: none (migrations that are not Porter's).
   */
  routinesDir?: string | false;
  /** Called for every migration and routine file, e.g. to print progress. */
  onProgress?: (event: MigrationProgress) => void;
  /**
   * The runtime role to create if missing and grant after the migrations (packages/db/src/grants.ts).
   * Default: `porter_app`, its password left as it is. `false`: no role, no grants (for migrations
   * that are not Porter's, e.g. the migrator's own tests).
   */
  runtimeRole?: RuntimeRoleSpec | false;
};

/**
 * What {@link migrate} did: the migrations applied now, how many were already applied (`skipped`,
 * which counts the `recorded` ones too), those recorded as applied because the database has what
 * they replace, the routines (absent with `routinesDir: false`), the runtime role.
 */
export type MigrateResult = {
  applied: string[];
  skipped: number;
  recorded: string[];
  routines?: RoutinesResult;
  runtimeRole?: RuntimeRoleResult;
};

/** The repository's `prisma/migrations`, found relative to this file (packages/db/src). */
export function defaultMigrationsDir(): string {
  return fileURLToPath(new URL("../../../prisma/migrations", import.meta.url));
}

/** sha256 (hex) of a migration's SQL, insensitive to CRLF line endings. */
export function migrationChecksum(sql: string): string {
  return sqlChecksum(sql);
}

/**
 * Reads every `<dir>/<name>/migration.sql`, sorted by name. Directories without a
 * `migration.sql` and plain files (such as Prisma's `migration_lock.toml`) are ignored.
 */
export async function readMigrations(migrationsDir: string): Promise<MigrationFile[]> {
  const entries = await readdir(migrationsDir, { withFileTypes: true });
  const names = entries
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name)
    .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const files: MigrationFile[] = [];
  for (const name of names) {
    let sql: string;
    try {
      sql = await readFile(join(migrationsDir, name, "migration.sql"), "utf8");
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") continue;
      throw error;
    }
    files.push({ name, sql, checksum: migrationChecksum(sql), replaces: await readReplaces(join(migrationsDir, name)) });
  }
  return files;
}

async function readReplaces(dir: string): Promise<string[]> {
  try {
    const text = await readFile(join(dir, "replaces"), "utf8");
    return text
      .split(/\r?\n/)
      .map((line) => line.trim())
      .filter((line) => line !== "" && !line.startsWith("#"));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw error;
  }
}

/**
 * Applies the pending migrations of `migrationsDir` to the database, in name order, then the
 * routines of `routinesDir`.
 *
 * - Takes a session advisory lock ({@link MIGRATION_LOCK_KEY}) first, so concurrent migrators
 *   serialize: the second one waits, then finds everything applied.
 * - Refuses to run (before applying anything) when an applied migration's file changed
 *   (checksum mismatch) or disappeared from disk (unless a migration on disk replaces it); the
 *   error names the migration.
 * - A squashing migration (one with a `replaces` list) is recorded as applied without running when
 *   the ledger has every migration it replaces, and run as usual when it has none of them; a
 *   ledger with only some of them is refused (that database needs the Porter version that still
 *   has the old migrations first).
 * - Runs each file in its own transaction, inserting its ledger row first: a migrator that
 *   somehow bypassed the lock fails on the ledger's primary key instead of applying twice.
 * - Then (re)creates the routines whose checksum changed, each in its own transaction, and drops
 *   what routines no longer create ({@link applyRoutines}).
 * - Then, still under the lock, creates the runtime role if missing and makes its privileges
 *   exactly those of packages/db/src/grants.ts ({@link applyRuntimeRole}; `runtimeRole`). It
 *   fails, naming what to add, when a table has no entry there.
 *
 * `target` is a connection string (a dedicated connection is opened and closed) or a pool (one
 * connection is checked out for the duration). Migrating is a step of its own: call it from
 * `npm run db:migrate` or test setup, never as a side effect of a process booting.
 */
export async function migrate(target: string | pg.Pool, opts: MigrateOptions = {}): Promise<MigrateResult> {
  const files = await readMigrations(opts.migrationsDir ?? defaultMigrationsDir());
  const routinesDir = opts.routinesDir ?? defaultRoutinesDir();
  const routines = routinesDir === false ? undefined : await readRoutines(routinesDir);
  const { client, done } = await connect(target);
  let broken: Error | undefined;
  try {
    await client.query("SELECT pg_advisory_lock($1::bigint)", [MIGRATION_LOCK_KEY]);
    try {
      let result = await applyLocked(client, files, opts.onProgress);
      if (routines) result = { ...result, routines: await applyRoutines(client, routines, opts.onProgress) };
      if (opts.runtimeRole === false) return result;
      try {
        return { ...result, runtimeRole: await applyRuntimeRole(client, opts.runtimeRole ?? {}) };
      } catch (error) {
        throw new MigrationError(`runtime role: ${reasonOf(error)}`, { cause: error });
      }
    } finally {
      // A failed unlock means a broken connection, whose end releases the lock anyway.
      await client.query("SELECT pg_advisory_unlock($1::bigint)", [MIGRATION_LOCK_KEY]).catch((error: Error) => {
        broken = error;
      });
    }
  } catch (error) {
    broken ??= error instanceof Error ? error : new Error(String(error));
    throw error;
  } finally {
    await done(broken);
  }
}

type Connection = { client: pg.ClientBase; done: (error?: Error) => Promise<void> };

async function connect(target: string | pg.Pool): Promise<Connection> {
  if (typeof target === "string") {
    const client = new pg.Client({ connectionString: target, application_name: "porter-migrator" });
    // A dropped connection also drops the session lock; report it through the pending query.
    client.on("error", () => {});
    await client.connect();
    return { client, done: () => client.end().catch(() => {}) };
  }
  const client = await target.connect();
  return {
    client,
    // A client whose last query failed may be mid-transaction: destroy it rather than reuse it.
    done: async (error) => client.release(error),
  };
}

/**
 * The squashing migrations to record as applied (the ledger has every name they replace, not
 * them); refuses a ledger that has only some of a squash's names.
 */
function squashesToRecord(files: MigrationFile[], applied: Map<string, string>): Set<string> {
  const toRecord = new Set<string>();
  for (const file of files) {
    if (file.replaces.length === 0 || applied.has(file.name)) continue;
    const absent = file.replaces.filter((name) => !applied.has(name));
    if (absent.length === 0) toRecord.add(file.name);
    else if (absent.length < file.replaces.length) {
      throw new MigrationError(
        `migration ${file.name} replaces ${file.replaces.length} older migrations, of which the database lacks `
          + `${absent.join(", ")}; migrate it with the Porter version that still has them first, then with this one`,
        { migration: file.name },
      );
    }
  }
  return toRecord;
}

async function applyLocked(client: pg.ClientBase, files: MigrationFile[], onProgress: MigrateOptions["onProgress"]): Promise<MigrateResult> {
  await client.query(`CREATE TABLE IF NOT EXISTS ${MIGRATIONS_TABLE} (
    name       text PRIMARY KEY,
    checksum   text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
  )`);
  const ledger = await client.query<{ name: string; checksum: string }>(`SELECT name, checksum FROM ${MIGRATIONS_TABLE} ORDER BY name`);
  const applied = new Map(ledger.rows.map((row) => [row.name, row.checksum]));
  // Rows of squashed migrations stay in the ledger (the database's history); their files are gone.
  const known = new Set(files.flatMap((file) => [file.name, ...file.replaces]));

  const missing = [...applied.keys()].filter((name) => !known.has(name));
  if (missing.length > 0) {
    throw new MigrationError(
      `migration ${missing.join(", ")} is applied to the database but missing on disk; `
        + `restore it (migrations are append-only) or use the matching version of Porter`,
      { migration: missing[0] },
    );
  }
  for (const file of files) {
    const checksum = applied.get(file.name);
    if (checksum !== undefined && checksum !== file.checksum) {
      throw new MigrationError(
        `migration ${file.name} was changed after it was applied (checksum ${checksum.slice(0, 12)}… `
          + `in the database, ${file.checksum.slice(0, 12)}… on disk); add a new migration instead`,
        { migration: file.name },
      );
    }
  }
  const toRecord = squashesToRecord(files, applied);

  const result: MigrateResult = { applied: [], skipped: 0, recorded: [] };
  for (const file of files) {
    const started = performance.now();
    if (applied.has(file.name)) {
      result.skipped += 1;
      onProgress?.({ kind: "migration", name: file.name, status: "skipped", durationMs: 0 });
      continue;
    }
    const isRecorded = toRecord.has(file.name);
    await client.query("BEGIN");
    try {
      await client.query(`INSERT INTO ${MIGRATIONS_TABLE} (name, checksum) VALUES ($1, $2)`, [file.name, file.checksum]);
      // No parameters: pg sends it as a simple query, so the file may hold many statements.
      if (!isRecorded) await client.query(file.sql);
      await client.query("COMMIT");
    } catch (error) {
      await client.query("ROLLBACK").catch(() => {});
      throw new MigrationError(`migration ${file.name} failed: ${reasonOf(error)}`, {
        migration: file.name,
        cause: error,
      });
    }
    if (isRecorded) {
      result.skipped += 1;
      result.recorded.push(file.name);
    } else {
      result.applied.push(file.name);
    }
    onProgress?.({
      kind: "migration",
      name: file.name,
      status: isRecorded ? "recorded" : "applied",
      durationMs: Math.round(performance.now() - started),
    });
  }
  return result;
}
