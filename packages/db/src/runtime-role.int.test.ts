import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { describe, expect, it, onTestFinished } from "vitest";
import { grantCoverage, RUNTIME_GRANTS } from "./grants";
import { migrate } from "./migrator";
import { DEFAULT_RUNTIME_ROLE, inspectConnectionRole, privilegeWarning, runtimeDatabaseUrl, runtimeRoleName } from "./runtime-role";
import { createTestDatabase, useTestDatabase } from "./testing/test-database";

const db = useTestDatabase();

/** The SQLSTATE `sql` fails with on the runtime role's pool (or "ok" when it succeeds). */
const asRuntime = async (sql: string): Promise<string> => {
  const client = await db.appPool.connect();
  try {
    await client.query(sql);
    return "ok";
  } catch (error) {
    return (error as { code?: string }).code ?? String(error);
  } finally {
    client.release();
  }
};

const tables = async (): Promise<string[]> =>
  (
    await db.pool.query<{ name: string }>(
      `SELECT c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') AND (NOT c.relispartition OR c.relname = ANY($1::text[])) ORDER BY 1`,
      [Object.keys(RUNTIME_GRANTS)],
    )
  ).rows.map((r) => r.name);

const auditCount = async () => Number((await db.pool.query<{ n: string }>(`SELECT count(*)::text AS n FROM audit_log`)).rows[0]!.n);

/** Inserts one audit row as the runtime role, in a transaction whose porter.actor is `actor`. */
const insertAudit = async (actor: string | null, columns: string, values: string) => {
  const client = await db.appPool.connect();
  try {
    await client.query("BEGIN");
    if (actor !== null) await client.query(`SELECT set_config('porter.actor', $1, true)`, [actor]);
    const { rows } = await client.query<{ id: string; at: Date; actor: string; now: Date }>(
      `INSERT INTO audit_log (${columns}) VALUES (${values}) RETURNING id::text, at, actor, now() AS now`,
    );
    await client.query("COMMIT");
    return rows[0]!;
  } catch (error) {
    await client.query("ROLLBACK");
    throw error;
  } finally {
    client.release();
  }
};

describe("the runtime role", () => {
  it("is what the test database's app connection logs in as: not a superuser, not the owner", async () => {
    expect(runtimeRoleName(db.appConnectionString)).toBe(DEFAULT_RUNTIME_ROLE);
    const role = await inspectConnectionRole(db.appPool);
    expect(role).toEqual({ user: DEFAULT_RUNTIME_ROLE, isSuperuser: false, isOwner: false });
    expect(privilegeWarning(role)).toBeUndefined();
    // The owner's connection (a superuser here) is flagged.
    const owner = await inspectConnectionRole(db.pool);
    expect(owner.isSuperuser || owner.isOwner).toBe(true);
    expect(privilegeWarning(owner)).toMatch(/superuser|owner/);
  });

  it("cannot edit, truncate or unguard the audit log, nor leave replication-role triggers behind", async () => {
    await insertAudit("test:setup", "action, object_type, object_id", "'x.create', 'x', '1'");
    const before = await auditCount();
    const refusals = {
      update: await asRuntime(`UPDATE audit_log SET reason = 'edited'`),
      delete: await asRuntime(`DELETE FROM audit_log`),
      truncate: await asRuntime(`TRUNCATE audit_log`),
      alter: await asRuntime(`ALTER TABLE audit_log ADD COLUMN note text`),
      disableTrigger: await asRuntime(`ALTER TABLE audit_log DISABLE TRIGGER audit_log_no_update`),
      disableAll: await asRuntime(`ALTER TABLE audit_log DISABLE TRIGGER ALL`),
      dropTrigger: await asRuntime(`DROP TRIGGER audit_log_no_update ON audit_log`),
      dropStamp: await asRuntime(`DROP TRIGGER audit_log_stamp ON audit_log`),
      createTrigger: await asRuntime(`CREATE TRIGGER sneaky BEFORE INSERT ON audit_log FOR EACH ROW EXECUTE FUNCTION audit_log_stamp()`),
      replaceFunction: await asRuntime(`CREATE OR REPLACE FUNCTION audit_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$`),
      replicationRole: await asRuntime(`SET session_replication_role = replica`),
      replicationRoleLocal: await asRuntime(`SELECT set_config('session_replication_role', 'replica', false)`),
      dropTable: await asRuntime(`DROP TABLE audit_log`),
      rename: await asRuntime(`ALTER TABLE audit_log RENAME TO audit_log_old`),
    };
    // 42501 insufficient_privilege (not owner / permission denied) everywhere: nothing ran.
    expect(refusals).toEqual(Object.fromEntries(Object.keys(refusals).map((k) => [k, "42501"])));
    // Refused by the privileges themselves, before the append-only trigger would be asked.
    for (const sql of [`UPDATE audit_log SET reason = 'edited'`, `DELETE FROM audit_log`, `TRUNCATE audit_log`]) {
      await expect(db.appPool.query(sql)).rejects.toThrow(/permission denied for table audit_log/);
    }
    expect(await auditCount()).toBe(before);
    const { rows } = await db.pool.query(`SELECT tgname, tgenabled FROM pg_trigger WHERE tgrelid = 'audit_log'::regclass AND NOT tgisinternal ORDER BY 1`);
    expect(rows).toEqual([
      { tgname: "audit_log_no_update", tgenabled: "O" },
      { tgname: "audit_log_stamp", tgenabled: "O" },
    ]);
  });

  it("gets the database's time and the transaction's actor, whatever at/actor it inserts; no actor, no row", async () => {
    const forged = await insertAudit("alice", "at, actor, action, object_type, object_id", "'2000-01-01T00:00:00Z', 'mallory', 'x.update', 'x', '1'");
    expect(forged.actor).toBe("alice");
    expect(forged.at.getTime()).toBe(forged.now.getTime());
    expect(forged.at.getFullYear()).toBeGreaterThan(2000);

    const before = await auditCount();
    await expect(insertAudit(null, "actor, action, object_type, object_id", "'mallory', 'x.update', 'x', '1'")).rejects.toMatchObject({
      code: "23502",
      message: expect.stringContaining("no actor"),
    });
    await expect(insertAudit("", "action, object_type, object_id", "'x.update', 'x', '1'")).rejects.toMatchObject({ code: "23502" });
    expect(await auditCount()).toBe(before);
  });

  it("runs no DDL and no TRUNCATE on any table, and creates nothing in the schema", async () => {
    const all = await tables();
    expect(all.length).toBeGreaterThan(15);
    for (const table of all) {
      const ident = `"${table}"`;
      expect([table, await asRuntime(`ALTER TABLE ${ident} ADD COLUMN hacked int`)]).toEqual([table, "42501"]);
      expect([table, await asRuntime(`TRUNCATE ${ident}`)]).toEqual([table, "42501"]);
      expect([table, await asRuntime(`DROP TABLE ${ident}`)]).toEqual([table, "42501"]);
      expect([table, await asRuntime(`CREATE INDEX ON ${ident} ((1))`)]).toEqual([table, "42501"]);
    }
    expect(await asRuntime(`CREATE TABLE public.mine (id int)`)).toBe("42501");
    expect(await asRuntime(`CREATE FUNCTION public.mine() RETURNS int LANGUAGE sql AS 'SELECT 1'`)).toBe("42501");
    expect(await asRuntime(`ALTER SEQUENCE lease_token_seq RESTART WITH 1`)).toBe("42501");
    expect(await asRuntime(`SELECT * FROM _porter_migrations`)).toBe("42501");
  });

  it("holds exactly the privileges of RUNTIME_GRANTS, and every table of the schema has an entry", async () => {
    const all = await tables();
    // A table without an entry fails here, and the migrator refuses it too (see below).
    expect(grantCoverage(all)).toEqual({ missing: [], stale: [] });
    const { rows } = await db.pool.query<{ table_name: string; privileges: string[] }>(
      `SELECT table_name, array_agg(privilege_type::text ORDER BY privilege_type) AS privileges
         FROM information_schema.role_table_grants
        WHERE grantee = $1 AND table_schema = 'public' GROUP BY table_name`,
      [DEFAULT_RUNTIME_ROLE],
    );
    const held = Object.fromEntries(rows.map((r) => [r.table_name, r.privileges.filter((p) => p !== "MAINTAIN")]));
    const declared = Object.fromEntries(
      Object.entries(RUNTIME_GRANTS)
        .filter(([, privileges]) => privileges.length > 0)
        .map(([table, privileges]) => [table, [...privileges].sort()]),
    );
    expect(held).toEqual(declared);
    const sequences = await db.pool.query<{ name: string; usage: boolean; update: boolean }>(
      `SELECT c.relname AS name, has_sequence_privilege($1, c.oid, 'USAGE') AS usage, has_sequence_privilege($1, c.oid, 'UPDATE') AS update
         FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public' AND c.relkind = 'S'`,
      [DEFAULT_RUNTIME_ROLE],
    );
    expect(sequences.rows.length).toBeGreaterThan(0);
    for (const row of sequences.rows) expect(row).toEqual({ name: row.name, usage: true, update: false });
  });
});

describe("the migrator and the runtime role", () => {
  it("refuses a table without an entry in RUNTIME_GRANTS, saying what to add", async () => {
    const empty = await createTestDatabase({ isEmpty: true, label: "grants" });
    const dir = await mkdtemp(join(tmpdir(), "porter-grants-"));
    onTestFinished(async () => {
      await rm(dir, { recursive: true, force: true });
      await empty.drop();
    });
    await mkdir(join(dir, "001_new"));
    await writeFile(join(dir, "001_new", "migration.sql"), "CREATE TABLE login_attempts (id int PRIMARY KEY);\n");
    const error = await migrate(empty.connectionString, { migrationsDir: dir, routinesDir: false }).catch((e: unknown) => e as Error);
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toContain('"login_attempts"');
    expect((error as Error).message).toContain("packages/db/src/grants.ts");
    expect((error as Error).message).toContain('  login_attempts: ["SELECT", "INSERT", "UPDATE", "DELETE"],');
  });

  it("refuses to use a superuser or the owner as the runtime role, changing nothing", async () => {
    const owner = new URL(db.connectionString).username || "postgres";
    await expect(migrate(db.connectionString, { runtimeRole: { name: owner } })).rejects.toThrow(/superuser|owner/);
    expect((await inspectConnectionRole(db.appPool)).user).toBe(DEFAULT_RUNTIME_ROLE);
  });

  it("sets the role's password as a SCRAM verifier, never in clear", async () => {
    // A role of this test's own, so the shared porter_app keeps its (absent) password.
    const name = `porter_app_t${Math.random().toString(16).slice(2, 8)}`;
    const client = new pg.Client({ connectionString: db.connectionString });
    await client.connect();
    onTestFinished(async () => {
      // Its grants live in this file's database, which is dropped; the role itself goes here.
      await client.query(`DROP OWNED BY ${name}`).catch(() => {});
      await client.query(`DROP ROLE IF EXISTS ${name}`).catch(() => {});
      await client.end();
    });
    const result = await migrate(db.connectionString, { runtimeRole: { name, password: "s3cret-Pässword" } });
    expect(result.runtimeRole).toEqual({ name, isCreated: true, isPasswordSet: true });
    const { rows } = await client.query<{ password: string; can_login: boolean }>(
      `SELECT rolpassword AS password, rolcanlogin AS can_login FROM pg_authid WHERE rolname = $1`,
      [name],
    );
    expect(rows[0]!.can_login).toBe(true);
    expect(rows[0]!.password).toMatch(/^SCRAM-SHA-256\$4096:/);
    expect(rows[0]!.password).not.toContain("s3cret");
    const again = await migrate(db.connectionString, { runtimeRole: { name } });
    expect(again.runtimeRole).toEqual({ name, isCreated: false, isPasswordSet: false });
  });
});

describe("runtimeDatabaseUrl", () => {
  it("uses PORTER_APP_DATABASE_URL as it is, else the owner's URL with the runtime role and its password", () => {
    expect(runtimeDatabaseUrl({ databaseUrl: "postgres://owner:pw@db:5432/porter", appDatabaseUrl: "postgres://me:x@h/d" })).toBe("postgres://me:x@h/d");
    expect(runtimeDatabaseUrl({ databaseUrl: "postgres://owner:pw@db:5432/porter?sslmode=require" })).toBe(
      "postgres://porter_app@db:5432/porter?sslmode=require",
    );
    expect(runtimeDatabaseUrl({ databaseUrl: "postgres://owner:pw@db/porter", appPassword: "a b/c@d" })).toBe("postgres://porter_app:a%20b%2Fc%40d@db/porter");
    expect(runtimeRoleName("postgres://svc_porter:x@h/d")).toBe("svc_porter");
  });
});
