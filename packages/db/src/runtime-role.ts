import type pg from "pg";
import { grantCoverage, missingGrantsMessage, RUNTIME_GRANTS, RUNTIME_MAINTAIN_TABLES } from "./grants";
import type { Queryable } from "./pool";
import { scramVerifier } from "./scram";

/** Name of the runtime role when `PORTER_APP_DATABASE_URL` does not name another. */
export const DEFAULT_RUNTIME_ROLE = "porter_app";

/** The runtime role the migrator creates (if missing) and grants. */
export type RuntimeRoleSpec = {
  /** Role name. Default {@link DEFAULT_RUNTIME_ROLE}. */
  name?: string;
  /** Set as the role's password (as a SCRAM verifier) on every migrate; unset leaves it as it is. */
  password?: string;
};

/** What {@link applyRuntimeRole} did. */
export type RuntimeRoleResult = { name: string; isCreated: boolean; isPasswordSet: boolean };

/** The runtime role is unusable as configured (a superuser, the tables' owner, a table without grants). */
export class RuntimeRoleError extends Error {
  constructor(message: string, opts: { cause?: unknown } = {}) {
    super(message, opts);
    this.name = "RuntimeRoleError";
  }
}

/**
 * Creates the runtime role if missing (LOGIN, nothing else), sets its password when one is given,
 * then makes its privileges on the `public` schema exactly {@link RUNTIME_GRANTS}: every table's
 * privileges are revoked and granted again, sequences get USAGE, the schema USAGE only, and on
 * PostgreSQL 17+ the tables of {@link RUNTIME_MAINTAIN_TABLES} get MAINTAIN. Runs as the owner
 * (the migrator's connection), one transaction for the grants. Refuses a role that is a
 * superuser or can act as the tables' owner, and a table without an entry in RUNTIME_GRANTS.
 */
export async function applyRuntimeRole(client: pg.ClientBase, spec: RuntimeRoleSpec = {}): Promise<RuntimeRoleResult> {
  const name = spec.name ?? DEFAULT_RUNTIME_ROLE;
  const role = client.escapeIdentifier(name);
  const isCreated = await createRoleIfMissing(client, name);
  if (spec.password !== undefined) {
    // A verifier, never the password: the statement may reach the server's log.
    await client.query(`ALTER ROLE ${role} WITH LOGIN PASSWORD ${client.escapeLiteral(scramVerifier(spec.password))}`);
  }

  const tables = (
    await client.query<{ name: string }>(
      `SELECT c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') AND (NOT c.relispartition OR c.relname = ANY($1::text[]))
        ORDER BY c.relname`,
      // Partitions are reached through their partitioned table, whose grants cover them; those that
      // come and go (finished_jobs' days, porter_history_ensure) hold none. One the runtime role
      // addresses by name (finished_jobs_default) has its own entry.
      [Object.keys(RUNTIME_GRANTS)],
    )
  ).rows.map((r) => r.name);
  const { missing } = grantCoverage(tables);
  if (missing.length > 0) throw new RuntimeRoleError(missingGrantsMessage(missing));

  const { rows } = await client.query<{ is_superuser: boolean; bypasses_rls: boolean; owns: string | null; version: number }>(
    `SELECT r.rolsuper AS is_superuser, r.rolbypassrls AS bypasses_rls,
            (SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
              WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p', 'S') AND pg_has_role(r.oid, c.relowner, 'USAGE')
              LIMIT 1) AS owns,
            current_setting('server_version_num')::int AS version
       FROM pg_roles r WHERE r.rolname = $1`,
    [name],
  );
  const found = rows[0];
  if (!found) throw new RuntimeRoleError(`runtime role "${name}" vanished while the migrator granted it`);
  if (found.is_superuser || found.bypasses_rls) {
    throw new RuntimeRoleError(
      `runtime role "${name}" is a superuser (or bypasses row security): it would bypass every guard, the audit log's `
        + `included. Use a role of its own (PORTER_APP_DATABASE_URL names it), not the owner or a superuser`,
    );
  }
  if (found.owns) {
    throw new RuntimeRoleError(
      `runtime role "${name}" can act as the owner of "${found.owns}" (it is the owner, or a member of the owner's role): `
        + `it could alter or drop what guards the data. Use a role of its own (PORTER_APP_DATABASE_URL names it), not the migrations' user`,
    );
  }

  await client.query("BEGIN");
  try {
    for (const table of tables) {
      const privileges = RUNTIME_GRANTS[table] ?? [];
      const ident = client.escapeIdentifier(table);
      await client.query(`REVOKE ALL ON TABLE ${ident} FROM ${role}`);
      if (privileges.length > 0) await client.query(`GRANT ${privileges.join(", ")} ON TABLE ${ident} TO ${role}`);
    }
    if (found.version >= 170000) {
      for (const table of RUNTIME_MAINTAIN_TABLES.filter((t) => tables.includes(t))) {
        await client.query(`GRANT MAINTAIN ON TABLE ${client.escapeIdentifier(table)} TO ${role}`);
      }
    }
    await client.query(`REVOKE ALL ON ALL SEQUENCES IN SCHEMA public FROM ${role}`);
    await client.query(`GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO ${role}`);
    await client.query(`GRANT USAGE ON SCHEMA public TO ${role}`);
    await client.query(`REVOKE CREATE ON SCHEMA public FROM ${role}`);
    // Before PostgreSQL 15 every role may create objects in `public` (through PUBLIC): take that
    // away where it is so (CVE-2018-1058's advice), or refuse when the migrator cannot.
    const canCreate = await client.query<{ can: boolean }>(`SELECT has_schema_privilege($1, 'public', 'CREATE') AS can`, [name]);
    if (canCreate.rows[0]?.can) {
      await client.query(`REVOKE CREATE ON SCHEMA public FROM PUBLIC`);
      const again = await client.query<{ can: boolean }>(`SELECT has_schema_privilege($1, 'public', 'CREATE') AS can`, [name]);
      if (again.rows[0]?.can) {
        throw new RuntimeRoleError(
          `runtime role "${name}" may create objects in schema public (granted to PUBLIC) and the migrator may not revoke it: `
            + `have the schema's owner run REVOKE CREATE ON SCHEMA public FROM PUBLIC`,
        );
      }
    }
    await client.query("COMMIT");
  } catch (error) {
    await client.query("ROLLBACK").catch(() => {});
    throw error;
  }
  return { name, isCreated, isPasswordSet: spec.password !== undefined };
}

async function createRoleIfMissing(client: pg.ClientBase, name: string): Promise<boolean> {
  const exists = await client.query(`SELECT 1 FROM pg_roles WHERE rolname = $1`, [name]);
  if (exists.rowCount) return false;
  try {
    // Roles are per server, advisory locks per database: migrators of two databases may race here.
    await client.query(`CREATE ROLE ${client.escapeIdentifier(name)} WITH LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS`);
    return true;
  } catch (error) {
    const code = (error as { code?: string }).code;
    // 42710 duplicate_object, 23505 on pg_authid's name index: another migrator created it first.
    if (code === "42710" || code === "23505") return false;
    if (code === "42501") {
      throw new RuntimeRoleError(
        `the migrations' user may not create the runtime role "${name}" (it needs CREATEROLE): create it once as an `
          + `administrator (CREATE ROLE ${client.escapeIdentifier(name)} LOGIN PASSWORD '…'), then migrate again`,
        { cause: error },
      );
    }
    throw error;
  }
}

/** Where the runtime connection string comes from (see README, "Configuration"). */
export type RuntimeUrlOptions = {
  /** The owner's connection string (`DATABASE_URL`). */
  databaseUrl?: string | undefined;
  /** `PORTER_APP_DATABASE_URL`: used as it is when set. */
  appDatabaseUrl?: string | undefined;
  /** `PORTER_APP_PASSWORD` (or the generated one under `.porter/`), put into the derived URL. */
  appPassword?: string | undefined;
};

/**
 * The connection string of the runtime role: `appDatabaseUrl` when set; otherwise `databaseUrl`
 * with its user replaced by {@link DEFAULT_RUNTIME_ROLE} and its password by `appPassword` (none:
 * for servers that trust local connections).
 */
export function runtimeDatabaseUrl(opts: RuntimeUrlOptions): string {
  if (opts.appDatabaseUrl) return opts.appDatabaseUrl;
  if (!opts.databaseUrl) throw new Error("runtimeDatabaseUrl: neither PORTER_APP_DATABASE_URL nor DATABASE_URL is set");
  const url = new URL(opts.databaseUrl);
  url.searchParams.delete("user");
  url.searchParams.delete("password");
  if (url.host) {
    url.username = DEFAULT_RUNTIME_ROLE;
    url.password = opts.appPassword ? encodeURIComponent(opts.appPassword) : "";
  } else {
    // A host-less URL (unix socket via ?host=) cannot carry a user in its authority.
    url.searchParams.set("user", DEFAULT_RUNTIME_ROLE);
    if (opts.appPassword) url.searchParams.set("password", opts.appPassword);
  }
  return url.toString();
}

/**
 * The connection string of the read replica (`PORTER_READ_DATABASE_URL`) as the runtime role: its
 * host, port, database and parameters, with the user and password of `runtimeUrl` (the primary's
 * runtime connection, {@link runtimeDatabaseUrl}). A physical replica has the primary's roles, so
 * the console reads there with no more privileges than on the primary, whatever user the URL named.
 */
export function readReplicaUrl(readDatabaseUrl: string, runtimeUrl: string): string {
  const read = new URL(readDatabaseUrl);
  const runtime = new URL(runtimeUrl);
  const user = runtime.username ? decodeURIComponent(runtime.username) : runtime.searchParams.get("user");
  const password = runtime.password ? decodeURIComponent(runtime.password) : runtime.searchParams.get("password");
  read.searchParams.delete("user");
  read.searchParams.delete("password");
  read.username = "";
  read.password = "";
  if (read.host) {
    if (user) read.username = encodeURIComponent(user);
    if (password) read.password = encodeURIComponent(password);
  } else {
    // A host-less URL (unix socket via ?host=) cannot carry a user in its authority.
    if (user) read.searchParams.set("user", user);
    if (password) read.searchParams.set("password", password);
  }
  return read.toString();
}

/** The role a runtime connection string logs in as (the user of `PORTER_APP_DATABASE_URL`, else the default). */
export function runtimeRoleName(appDatabaseUrl?: string): string {
  if (!appDatabaseUrl) return DEFAULT_RUNTIME_ROLE;
  const url = new URL(appDatabaseUrl);
  const user = url.username ? decodeURIComponent(url.username) : url.searchParams.get("user");
  if (!user) throw new Error("PORTER_APP_DATABASE_URL names no user: put the runtime role's name in it");
  return user;
}

/** The password in a connection string, if any. */
export function passwordOf(connectionString: string | undefined): string | undefined {
  if (!connectionString) return undefined;
  const url = new URL(connectionString);
  return url.password ? decodeURIComponent(url.password) : (url.searchParams.get("password") ?? undefined);
}

/** Who a connection runs as, and whether that is more than the runtime role should be. */
export type ConnectionRole = { user: string; isSuperuser: boolean; isOwner: boolean };

/**
 * Reads who `db` is connected as: a superuser, or a role that can act as the owner of the `jobs`
 * table (the migrations' user), is more than a console, worker or CLI command should run as.
 */
export async function inspectConnectionRole(db: Queryable): Promise<ConnectionRole> {
  const { rows } = await db.query<{ user: string; is_superuser: boolean; is_owner: boolean }>(
    `SELECT current_user::text AS user, r.rolsuper AS is_superuser,
            coalesce((SELECT pg_has_role(c.relowner, 'USAGE') FROM pg_class c
                       WHERE c.oid = to_regclass('public.jobs')), false) AS is_owner
       FROM pg_roles r WHERE r.rolname = current_user`,
  );
  const row = rows[0];
  return { user: row?.user ?? "?", isSuperuser: row?.is_superuser ?? false, isOwner: row?.is_owner ?? false };
}

/**
 * The one warning a process logs at start when it runs with more privileges than the runtime
 * role's, or undefined when it does not.
 */
export function privilegeWarning(role: ConnectionRole): string | undefined {
  if (!role.isSuperuser && !role.isOwner) return undefined;
  const what = role.isSuperuser ? "a superuser" : "the owner of Porter's tables";
  return (
    `connected to PostgreSQL as "${role.user}", ${what}: the audit log's guards and the least-privilege grants do not `
    + `bind this process. Run the console, workers and CLI as the runtime role (${DEFAULT_RUNTIME_ROLE}, created by `
    + `npm run db:migrate; see README "Configuration")`
  );
}

/**
 * A hint for a failed login as the runtime role (SQLSTATE 28000: no such role, 28P01: wrong
 * password), or undefined for any other error.
 */
export function runtimeLoginHint(error: unknown): string | undefined {
  const code = (error as { code?: string } | null)?.code;
  if (code !== "28000" && code !== "28P01") return undefined;
  return (
    `cannot log in as the runtime role: run npm run db:migrate (it creates ${DEFAULT_RUNTIME_ROLE} and grants it), and when `
    + `the server asks for a password set PORTER_APP_PASSWORD (the migrator sets it on the role) or PORTER_APP_DATABASE_URL`
  );
}
