import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { describe, expect, it, onTestFinished } from "vitest";
import {
  defaultMigrationsDir,
  migrate,
  migrationChecksum,
  MigrationError,
  readMigrations,
  type MigrationProgress,
} from "./migrator";
import { createTestDatabase, type TestDatabase } from "./testing/test-database";

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
  const { rows } = await db.pool.query<{ name: string; checksum: string }>(
    "SELECT name, checksum FROM _porter_migrations ORDER BY name",
  );
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
    const first = await migrate(db.connectionString, { migrationsDir: dir, runtimeRole: false, onProgress: (e) => events.push(e) });
    expect(first).toEqual({ applied: ["001_create", "002_seed"], skipped: 0 });
    expect(events.map((e) => [e.name, e.status])).toEqual([
      ["001_create", "applied"],
      ["002_seed", "applied"],
    ]);

    const second = await migrate(db.pool, { migrationsDir: dir, runtimeRole: false });
    expect(second).toEqual({ applied: [], skipped: 2 });
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
    await migrate(db.connectionString, { migrationsDir: dir, runtimeRole: false });

    // Line endings alone are not a change (a Windows checkout must not break migrations).
    await write("001_create", CREATE.replaceAll("\n", "\r\n"));
    await expect(migrate(db.connectionString, { migrationsDir: dir, runtimeRole: false })).resolves.toEqual({ applied: [], skipped: 1 });

    await write("001_create", CREATE.replace("note text", "note varchar(10)"));
    await write("002_seed", SEED);
    const error = await migrate(db.connectionString, { migrationsDir: dir, runtimeRole: false }).catch((e: unknown) => e);
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
    await migrate(db.connectionString, { migrationsDir: dir, runtimeRole: false });
    await rm(join(dir, "002_seed"), { recursive: true });

    await expect(migrate(db.connectionString, { migrationsDir: dir, runtimeRole: false })).rejects.toThrow(
      /migration 002_seed is applied to the database but missing on disk/,
    );
  });

  it("rolls a failing file back together with its ledger row, keeping earlier files", async () => {
    const db = await emptyDatabase();
    const { dir, write } = await migrationsDir();
    await write("001_create", CREATE);
    await write("002_seed", "INSERT INTO t VALUES (1, 'half');\nINSERT INTO missing_table VALUES (1);\n");

    await expect(migrate(db.pool, { migrationsDir: dir, runtimeRole: false })).rejects.toThrow(
      /migration 002_seed failed: relation "missing_table" does not exist/,
    );
    expect((await ledger(db)).map((row) => row.name)).toEqual(["001_create"]);
    expect(await rowsOfT(db)).toBe(0);

    await write("002_seed", SEED);
    expect(await migrate(db.pool, { migrationsDir: dir, runtimeRole: false })).toEqual({ applied: ["002_seed"], skipped: 1 });
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
      migrate(db.connectionString, { migrationsDir: dir, runtimeRole: false }),
      migrate(db.pool, { migrationsDir: dir, runtimeRole: false }),
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
    expect(results.map((r) => r.applied).sort((a, b) => a.length - b.length)).toEqual([
      [],
      ["001_create", "002_seed"],
    ]);
    expect(results.map((r) => r.skipped).sort()).toEqual([0, 2]);
    expect((await ledger(db)).map((row) => row.name)).toEqual(["001_create", "002_seed"]);
    expect(await rowsOfT(db)).toBe(1);
  });

  it("applies the repository's prisma/migrations by default", async () => {
    const db = await emptyDatabase();
    const names = (await readMigrations(defaultMigrationsDir())).map((file) => file.name);
    expect(names).toContain("20261130000000_init");

    expect(await migrate(db.connectionString)).toEqual({
      applied: names,
      skipped: 0,
      runtimeRole: { name: "porter_app", isCreated: expect.any(Boolean), isPasswordSet: false },
    });
    const { rows } = await db.pool.query("SELECT 1 FROM information_schema.tables WHERE table_name = 'jobs'");
    expect(rows).toHaveLength(1);
  });
});
