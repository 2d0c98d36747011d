import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { describe, expect, it, onTestFinished } from "vitest";
import { defaultMigrationsDir, describeProgress, MigrationError, type MigrationProgress, migrate, migrationChecksum, readMigrations } from "./migrator";
import { defaultRoutinesDir, readRoutines } from "./routines";
import { createTestDatabase, type TestDatabase } from "./testing/test-database";

/** The migration that squashed the eleven migrations of issues 1–9. */
const BASELINE = "20261202000400_baseline";

/** An empty database (no template, no ledger), dropped after the test unless it failed. */
async function emptyDatabase(): Promise<TestDatabase> {
  const db = await createTestDatabase({ isEmpty: true, label: "migrator" });
  onTestFinished(async ({ task }) => {
    if (task.result?.state === "fail") {
      await db.pool.end();
      console.warn(`[porter] kept test database ${db.name} for inspection`);
    } else {
      await db.drop();
    }
  });
  return db;
}

/** A temporary migrations directory; `write(name, sql)` adds or changes `<name>/migration.sql`. */
async function migrationsDir() {
  const dir = await mkdtemp(join(tmpdir(), "porter-migrations-"));
  onTestFinished(() => rm(dir, { recursive: true, force: true }));
  const write = async (name: string, sql: string) => {
    await mkdir(join(dir, name), { recursive: true });
    await writeFile(join(dir, name, "migration.sql"), sql);
  };
  return { dir, write };
}

const CREATE = "CREATE TABLE t (id int PRIMARY KEY, note text);\nCREATE INDEX t_note_idx ON t (note);\n";
const SEED = "INSERT INTO t VALUES (1, 'seed');\n";

async function ledger(db: TestDatabase) {
  const { rows } = await db.pool.query<{ name: string; checksum: string }>("SELECT name, checksum FROM _porter_migrations ORDER BY name");
  return rows;
}

async function rowsOfT(db: TestDatabase): Promise<number> {
  const { rows } = await db.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM t");
  return rows[0]?.n ?? -1;
}

describe("migrate", () => {
  it("applies files in name order once; a second run is a no-op", async () => {
    const db = await emptyDatabase();
    const { dir, write } = await migrationsDir();
    await write("002_seed", SEED); // written first: order comes from names, not from disk
    await write("001_create", CREATE);
    await writeFile(join(dir, "migration_lock.toml"), 'provider = "postgresql"\n');

    const events: MigrationProgress[] = [];
    const first = await migrate(db.connectionString, { migrationsDir: dir, runtimeRole: false, routinesDir: false, onProgress: (e) => events.push(e) });
    expect(first).toEqual({ applied: ["001_create", "002_seed"], skipped: 0, recorded: [] });
    expect(events.map((e) => [e.name, e.status])).toEqual([
      ["001_create", "applied"],
      ["002_seed", "applied"],
    ]);

    const second = await migrate(db.pool, { migrationsDir: dir, runtimeRole: false, routinesDir: false });
    expect(second).toEqual({ applied: [], skipped: 2, recorded: [] });
    expect(await rowsOfT(db)).toBe(1);
    expect(await ledger(db)).toEqual([
      { name: "001_create", checksum: migrationChecksum(CREATE) },
      { name: "002_seed", checksum: migrationChecksum(SEED) },
    ]);
  });

  it("refuses an applied file whose checksum changed, naming it, before applying anything", async () => {
    const db = await emptyDatabase();
    const { dir, write } = await migrationsDir();
    await write("001_create", CREATE);
    await migrate(db.connectionString, { migrationsDir: dir, runtimeRole: false, routinesDir: false });

    // Line endings alone are not a change (a Windows checkout must not break migrations).
    await write("001_create", CREATE.replaceAll("\n", "\r\n"));
    await expect(migrate(db.connectionString, { migrationsDir: dir, runtimeRole: false, routinesDir: false })).resolves.toEqual({
      applied: [],
      skipped: 1,
      recorded: [],
    });

    await write("001_create", CREATE.replace("note text", "note varchar(10)"));
    await write("002_seed", SEED);
    const error = await migrate(db.connectionString, { migrationsDir: dir, runtimeRole: false, routinesDir: false }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MigrationError);
    expect((error as MigrationError).message).toMatch(/migration 001_create was changed after it was applied/);
    expect((error as MigrationError).migration).toBe("001_create");
    expect((await ledger(db)).map((row) => row.name)).toEqual(["001_create"]);
    expect(await rowsOfT(db)).toBe(0);
  });

  it("refuses an applied migration that is missing on disk", async () => {
    const db = await emptyDatabase();
    const { dir, write } = await migrationsDir();
    await write("001_create", CREATE);
    await write("002_seed", SEED);
    await migrate(db.connectionString, { migrationsDir: dir, runtimeRole: false, routinesDir: false });
    await rm(join(dir, "002_seed"), { recursive: true });

    await expect(migrate(db.connectionString, { migrationsDir: dir, runtimeRole: false, routinesDir: false })).rejects.toThrow(
      /migration 002_seed is applied to the database but missing on disk/,
    );
  });

  it("rolls a failing file back together with its ledger row, keeping earlier files", async () => {
    const db = await emptyDatabase();
    const { dir, write } = await migrationsDir();
    await write("001_create", CREATE);
    await write("002_seed", "INSERT INTO t VALUES (1, 'half');\nINSERT INTO missing_table VALUES (1);\n");

    await expect(migrate(db.pool, { migrationsDir: dir, runtimeRole: false, routinesDir: false })).rejects.toThrow(
      /migration 002_seed failed: relation "missing_table" does not exist/,
    );
    expect((await ledger(db)).map((row) => row.name)).toEqual(["001_create"]);
    expect(await rowsOfT(db)).toBe(0);

    await write("002_seed", SEED);
    expect(await migrate(db.pool, { migrationsDir: dir, runtimeRole: false, routinesDir: false })).toEqual({ applied: ["002_seed"], skipped: 1, recorded: [] });
    // The pool is still usable: the failed run's connection was not left inside a transaction.
    expect(await rowsOfT(db)).toBe(1);
  });

  it("serializes two concurrent migrators: each file is applied exactly once", async () => {
    const db = await emptyDatabase();
    const { dir, write } = await migrationsDir();
    // The sleep keeps the first migrator inside its transaction long enough for the second to
    // arrive and wait on the advisory lock.
    await write("001_create", `${CREATE}SELECT pg_sleep(0.5);\n`);
    await write("002_seed", SEED);

    const runs = Promise.allSettled([
      migrate(db.connectionString, { migrationsDir: dir, runtimeRole: false, routinesDir: false }),
      migrate(db.pool, { migrationsDir: dir, runtimeRole: false, routinesDir: false }),
    ]);
    let sawWaiter = false;
    for (let i = 0; i < 40 && !sawWaiter; i++) {
      const { rows } = await db.pool.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_stat_activity
          WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event = 'advisory'`,
      );
      sawWaiter = (rows[0]?.n ?? 0) > 0;
      if (!sawWaiter) await sleep(25);
    }
    const settled = await runs;

    expect(settled.map((outcome) => (outcome.status === "rejected" ? String(outcome.reason) : "ok"))).toEqual(["ok", "ok"]);
    const results = settled.flatMap((outcome) => (outcome.status === "fulfilled" ? [outcome.value] : []));
    expect(sawWaiter).toBe(true);
    expect(results.map((r) => r.applied).sort((a, b) => a.length - b.length)).toEqual([[], ["001_create", "002_seed"]]);
    expect(results.map((r) => r.skipped).sort()).toEqual([0, 2]);
    expect((await ledger(db)).map((row) => row.name)).toEqual(["001_create", "002_seed"]);
    expect(await rowsOfT(db)).toBe(1);
  });

  it("applies the repository's prisma/migrations and routines by default", async () => {
    const db = await emptyDatabase();
    const names = (await readMigrations(defaultMigrationsDir())).map((file) => file.name);
    const routines = (await readRoutines(defaultRoutinesDir())).map((file) => file.name);
    expect(names).toContain(BASELINE);
    expect(routines).toEqual(expect.arrayContaining(["claim.sql", "aging.sql", "tokens.sql", "authenticate-key.sql", "audit.sql"]));

    expect(await migrate(db.connectionString)).toEqual({
      applied: names,
      skipped: 0,
      recorded: [],
      routines: { applied: routines, skipped: 0, dropped: [] },
      runtimeRole: { name: "porter_app", isCreated: expect.any(Boolean), isPasswordSet: false },
    });
    const { rows } = await db.pool.query("SELECT 1 FROM information_schema.tables WHERE table_name = 'jobs'");
    expect(rows).toHaveLength(1);
    // The runtime role may call every routine (functions keep PUBLIC's EXECUTE; grants.ts declares
    // table privileges only), and may not read the routines ledger.
    const { rows: functions } = await db.pool.query<{ name: string; can: boolean }>(
      `SELECT p.proname AS name, has_function_privilege('porter_app', p.oid, 'EXECUTE') AS can
         FROM pg_proc p WHERE p.pronamespace = 'public'::regnamespace ORDER BY 1`,
    );
    expect(functions).toEqual(
      [
        "audit_log_append_only",
        "audit_log_stamp",
        "porter_age",
        "porter_authenticate_key",
        "porter_claim",
        "porter_claim_rows",
        "porter_dlq_fingerprint",
        "porter_dlq_record",
        "porter_dlq_release",
        "porter_dlq_stamp",
        "porter_effect_claim",
        "porter_effect_close",
        "porter_effect_commit",
        "porter_effect_fence",
        "porter_handover",
        "porter_history_ensure",
        "porter_history_horizon_s",
        "porter_history_partitions",
        "porter_history_retire",
        "porter_normalize_error_message",
        "porter_redrive_eligibility",
        "porter_stream_finished_insert",
        "porter_stream_jobs_insert",
        "porter_stream_jobs_update_row",
        "porter_tokens",
        "porter_uuidv7_floor",
        "porter_uuidv7_time",
        "porter_webhook_outbox",
      ].map((name) => ({
        name,
        can: true,
      })),
    );
    const { rows: ledgerRights } = await db.pool.query<{ can: boolean }>(`SELECT has_table_privilege('porter_app', '_porter_routines', 'SELECT') AS can`);
    expect(ledgerRights).toEqual([{ can: false }]);
  });
});

/** A migrations directory and a routines directory, temporary; `writeRoutine(name, sql)` adds or changes `<name>`. */
async function routinesDir() {
  const dir = await mkdtemp(join(tmpdir(), "porter-routines-"));
  onTestFinished(() => rm(dir, { recursive: true, force: true }));
  const writeRoutine = (name: string, sql: string) => writeFile(join(dir, name), sql);
  return { dir, writeRoutine };
}

async function functionsOf(db: TestDatabase): Promise<string[]> {
  const { rows } = await db.pool.query<{ name: string }>(
    `SELECT p.oid::regprocedure::text AS name FROM pg_proc p WHERE p.pronamespace = 'public'::regnamespace ORDER BY 1`,
  );
  return rows.map((row) => row.name);
}

const TABLES = "CREATE TABLE t (id int PRIMARY KEY, note text);\n";
const ONE = "CREATE OR REPLACE FUNCTION one() RETURNS int LANGUAGE sql IMMUTABLE AS $$ SELECT 1 $$;\n";
const STAMP =
  "CREATE OR REPLACE FUNCTION t_stamp() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN NEW.note := 'stamped'; RETURN NEW; END $$;\n"
  + "CREATE OR REPLACE TRIGGER t_stamp BEFORE INSERT ON t FOR EACH ROW EXECUTE FUNCTION t_stamp();\n";

describe("migrate: routines", () => {
  it("runs routines after the migrations, again only when a file's checksum changed", async () => {
    const db = await emptyDatabase();
    const { dir, write } = await migrationsDir();
    const routines = await routinesDir();
    await write("001_create", TABLES);
    await routines.writeRoutine("one.sql", ONE);
    await routines.writeRoutine("stamp.sql", STAMP);
    await writeFile(join(routines.dir, "stamp.int.test.ts"), "// not a routine\n");
    const opts = { migrationsDir: dir, routinesDir: routines.dir, runtimeRole: false } as const;

    const events: MigrationProgress[] = [];
    const first = await migrate(db.connectionString, { ...opts, onProgress: (e) => events.push(e) });
    expect(first.routines).toEqual({ applied: ["one.sql", "stamp.sql"], skipped: 0, dropped: [] });
    expect(events.map((e) => [e.kind, e.name, e.status])).toEqual([
      ["migration", "001_create", "applied"],
      ["routine", "one.sql", "applied"],
      ["routine", "stamp.sql", "applied"],
    ]);
    expect(events.map(describeProgress)[1]).toMatch(/^ {2}applied routine one\.sql \(\d+ ms\)$/);
    await db.pool.query("INSERT INTO t (id) VALUES (1)");
    expect((await db.pool.query("SELECT note FROM t")).rows).toEqual([{ note: "stamped" }]);

    expect((await migrate(db.pool, opts)).routines).toEqual({ applied: [], skipped: 2, dropped: [] });

    await routines.writeRoutine("one.sql", ONE.replace("SELECT 1", "SELECT 2"));
    expect((await migrate(db.pool, opts)).routines).toEqual({ applied: ["one.sql"], skipped: 1, dropped: [] });
    expect((await db.pool.query("SELECT one() AS v")).rows).toEqual([{ v: 2 }]);
    const { rows } = await db.pool.query<{ name: string; objects: string[] }>("SELECT name, objects FROM _porter_routines ORDER BY name");
    expect(rows).toEqual([
      { name: "one.sql", objects: ["FUNCTION public.one()"] },
      { name: "stamp.sql", objects: ["FUNCTION public.t_stamp()", "TRIGGER t_stamp ON public.t"] },
    ]);
  });

  it("drops an overload a signature change left behind, and everything of a file removed from source", async () => {
    const db = await emptyDatabase();
    const { dir, write } = await migrationsDir();
    const routines = await routinesDir();
    await write("001_create", TABLES);
    await routines.writeRoutine("one.sql", ONE);
    await routines.writeRoutine("stamp.sql", STAMP);
    const opts = { migrationsDir: dir, routinesDir: routines.dir, runtimeRole: false } as const;
    await migrate(db.connectionString, opts);

    // one() becomes one(integer): CREATE OR REPLACE makes a second function, the migrator drops the first.
    await routines.writeRoutine("one.sql", "CREATE OR REPLACE FUNCTION one(n int) RETURNS int LANGUAGE sql IMMUTABLE AS $$ SELECT n $$;\n");
    expect((await migrate(db.connectionString, opts)).routines).toEqual({
      applied: ["one.sql"],
      skipped: 1,
      dropped: ["FUNCTION public.one()"],
    });
    expect(await functionsOf(db)).toEqual(["one(integer)", "t_stamp()"]);

    // A function moved to another file is kept (never absent in between).
    await routines.writeRoutine("two.sql", "CREATE OR REPLACE FUNCTION one(n int) RETURNS int LANGUAGE sql IMMUTABLE AS $$ SELECT n $$;\n");
    await rm(join(routines.dir, "one.sql"));
    const events: MigrationProgress[] = [];
    expect((await migrate(db.connectionString, { ...opts, onProgress: (e) => events.push(e) })).routines).toEqual({
      applied: ["two.sql"],
      skipped: 1,
      dropped: [],
    });
    expect(events.filter((e) => e.kind === "routine").map((e) => [e.name, e.status])).toEqual([
      ["stamp.sql", "skipped"],
      ["two.sql", "applied"],
      ["one.sql", "dropped"],
    ]);
    expect(await functionsOf(db)).toEqual(["one(integer)", "t_stamp()"]);

    // A file removed from source: its trigger goes first, then its function, then its ledger row.
    await rm(join(routines.dir, "stamp.sql"));
    expect((await migrate(db.connectionString, opts)).routines).toEqual({
      applied: [],
      skipped: 1,
      dropped: ["TRIGGER t_stamp ON public.t", "FUNCTION public.t_stamp()"],
    });
    expect(await functionsOf(db)).toEqual(["one(integer)"]);
    const { rows } = await db.pool.query("SELECT name FROM _porter_routines ORDER BY name");
    expect(rows).toEqual([{ name: "two.sql" }]);
  });

  it("rolls a failing routine back with its ledger row, naming it; the migrations stay applied", async () => {
    const db = await emptyDatabase();
    const { dir, write } = await migrationsDir();
    const routines = await routinesDir();
    await write("001_create", TABLES);
    await routines.writeRoutine("one.sql", ONE);
    await routines.writeRoutine("stamp.sql", STAMP.replace("ON t FOR", "ON missing_table FOR"));
    const opts = { migrationsDir: dir, routinesDir: routines.dir, runtimeRole: false } as const;

    const error = await migrate(db.pool, opts).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MigrationError);
    expect((error as MigrationError).message).toMatch(/routine stamp\.sql failed: relation "missing_table" does not exist/);
    expect((error as MigrationError).migration).toBe("routines/stamp.sql");
    expect(await functionsOf(db)).toEqual(["one()"]);
    expect((await db.pool.query("SELECT name FROM _porter_routines")).rows).toEqual([{ name: "one.sql" }]);
    expect((await ledger(db)).map((row) => row.name)).toEqual(["001_create"]);

    await routines.writeRoutine("stamp.sql", STAMP);
    expect((await migrate(db.pool, opts)).routines).toEqual({ applied: ["stamp.sql"], skipped: 1, dropped: [] });
  });
});

describe("migrate: a squashing migration (replaces)", () => {
  /** 001 and 002 applied the old way, then replaced on disk by 003_baseline (which would fail if run). */
  async function squashed() {
    const db = await emptyDatabase();
    const { dir, write } = await migrationsDir();
    await write("001_create", CREATE);
    await write("002_seed", SEED);
    const opts = { migrationsDir: dir, runtimeRole: false, routinesDir: false } as const;
    return { db, dir, write, opts };
  }
  const BASELINE_SQL = `${CREATE}${SEED}`;
  const squash = async (dir: string, write: (name: string, sql: string) => Promise<void>) => {
    await rm(join(dir, "001_create"), { recursive: true, force: true });
    await rm(join(dir, "002_seed"), { recursive: true, force: true });
    await write("003_baseline", BASELINE_SQL);
    await writeFile(join(dir, "003_baseline", "replaces"), "# squashed\n001_create\n002_seed\n");
  };

  it("records it as applied, without running it, when the ledger has every migration it replaces", async () => {
    const { db, dir, write, opts } = await squashed();
    await migrate(db.connectionString, opts);
    await squash(dir, write);
    await write("004_more", "INSERT INTO t VALUES (2, 'after');\n");

    const events: MigrationProgress[] = [];
    expect(await migrate(db.connectionString, { ...opts, onProgress: (e) => events.push(e) })).toEqual({
      applied: ["004_more"],
      skipped: 1,
      recorded: ["003_baseline"],
    });
    expect(events.map((e) => [e.name, e.status])).toEqual([
      ["003_baseline", "recorded"],
      ["004_more", "applied"],
    ]);
    expect(await rowsOfT(db)).toBe(2);
    // The old rows stay (the database's history) and are not "missing on disk".
    expect(await ledger(db)).toEqual([
      { name: "001_create", checksum: migrationChecksum(CREATE) },
      { name: "002_seed", checksum: migrationChecksum(SEED) },
      { name: "003_baseline", checksum: migrationChecksum(BASELINE_SQL) },
      { name: "004_more", checksum: expect.any(String) },
    ]);
    expect(await migrate(db.connectionString, opts)).toEqual({ applied: [], skipped: 2, recorded: [] });
  });

  it("runs it as usual on a fresh database", async () => {
    const { db, dir, write, opts } = await squashed();
    await squash(dir, write);
    expect(await migrate(db.connectionString, opts)).toEqual({ applied: ["003_baseline"], skipped: 0, recorded: [] });
    expect(await rowsOfT(db)).toBe(1);
  });

  it("refuses a ledger with only some of the migrations it replaces, changing nothing", async () => {
    const { db, dir, write, opts } = await squashed();
    await rm(join(dir, "002_seed"), { recursive: true });
    await migrate(db.connectionString, opts);
    await squash(dir, write);

    const error = await migrate(db.connectionString, opts).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MigrationError);
    expect((error as MigrationError).message).toMatch(/migration 003_baseline replaces 2 older migrations, of which the database lacks 002_seed/);
    expect((await ledger(db)).map((row) => row.name)).toEqual(["001_create"]);
    expect(await rowsOfT(db)).toBe(0);
  });
});

describe("migrate: upgrading a database migrated with the old migrations", () => {
  it("records the baseline, applies the routines, refuses nothing", async () => {
    const db = await emptyDatabase();
    const baseline = (await readMigrations(defaultMigrationsDir())).find((file) => file.name === BASELINE);
    expect(baseline?.replaces).toHaveLength(11);
    await migrate(db.connectionString, { runtimeRole: false });
    // What Porter before the squash left: the old migrations in the ledger, the same schema and
    // functions (the baseline and routines dump identically to the old chain), no routines ledger.
    // Migrations after the baseline stay recorded (their tables are there too).
    await db.pool.query(`DELETE FROM _porter_migrations WHERE name <= $1`, [BASELINE]);
    await db.pool.query(`DROP TABLE _porter_routines`);
    for (const name of baseline?.replaces ?? []) {
      await db.pool.query("INSERT INTO _porter_migrations (name, checksum) VALUES ($1, 'old')", [name]);
    }
    await db.pool.query(
      `CREATE OR REPLACE FUNCTION porter_tokens(p_tokens double precision, p_updated timestamptz, p_rate double precision,
                                                p_burst double precision, p_now timestamptz)
       RETURNS double precision LANGUAGE sql IMMUTABLE AS $$ SELECT 0::double precision $$`,
    );

    const result = await migrate(db.connectionString);
    const later = (await readMigrations(defaultMigrationsDir())).filter((file) => file.name > BASELINE).length;
    expect(result).toMatchObject({ applied: [], skipped: 1 + later, recorded: [BASELINE], routines: { skipped: 0, dropped: [] } });
    expect(result.routines?.applied).toContain("tokens.sql");
    // The routine is the source's again.
    const { rows } = await db.pool.query<{ v: number }>("SELECT porter_tokens(NULL, NULL, 1, 5, now()) AS v");
    expect(rows).toEqual([{ v: 5 }]);
    expect(await migrate(db.connectionString)).toMatchObject({ applied: [], skipped: 1 + later, recorded: [], routines: { applied: [] } });
  });
});
