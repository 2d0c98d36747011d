import { relative } from "node:path";
import { startEmbeddedPostgres } from "@porter/db/embedded";
import { createPool } from "@porter/db/pool";
import { type ControlDb, createPrisma } from "@porter/db/prisma";
import { inspectConnectionRole, privilegeWarning, type RuntimeRoleSpec, runtimeLoginHint } from "@porter/db/runtime-role";
import type pg from "pg";
import { appRoleFor, resolveAppPassword } from "./app-role";
import type { CliEnv } from "./env";
import { embeddedDataDir, porterHome, repoRoot } from "./paths";

/** A command's database: a pool, the control plane's Prisma client on it, and how to let go of both (stopping an embedded server we started). */
export type CliDatabase = {
  pool: pg.Pool;
  /** Shares `pool`'s connections; users, keys and configuration go through it (@porter/core's control plane). */
  prisma: ControlDb;
  connectionString: string;
  /** The runtime role the migrator creates and grants (its password when one is configured). */
  runtimeRole: RuntimeRoleSpec;
  close: () => Promise<void>;
};

/**
 * Connects to `DATABASE_URL`, or when it is unset to the embedded PostgreSQL under
 * `.porter/pg`: the server of a running `npm start` is reused as it is; otherwise one is started
 * for the command's duration and stopped by `close()`.
 *
 * `as: "runtime"` (every command but `migrate`) connects as the runtime role (README
 * "Configuration"); a login refused as that role becomes an error saying what to do, and a
 * connection that turns out to be a superuser's or the owner's logs one warning. `as: "owner"`
 * (`migrate`) connects with the URL as it is.
 */
export const openCliDatabase = async (options: { env: CliEnv; as: "owner" | "runtime"; log: (message: string) => void }): Promise<CliDatabase> => {
  const { env } = options;
  const home = porterHome(repoRoot());
  let ownerUrl: string;
  let stopEmbedded: () => Promise<void> = async () => {};
  if (env.DATABASE_URL) {
    ownerUrl = env.DATABASE_URL;
  } else {
    const dataDir = embeddedDataDir(repoRoot());
    const embedded = await startEmbeddedPostgres({
      dataDir,
      onLog: (message) => {
        // The server's own chatter stays quiet; @porter/db's notes (initdb, stale server recovery)
        // do not, except "sharing", which the line below says as well.
        if (message.startsWith("embedded PostgreSQL") && !message.includes("sharing the server")) options.log(message);
      },
    });
    const where = relative(process.cwd(), dataDir) || dataDir;
    options.log(
      embedded.isOwner
        ? `DATABASE_URL is not set: using the embedded PostgreSQL in ${where} (port ${embedded.port}), started for this command`
        : `DATABASE_URL is not set: using the embedded PostgreSQL in ${where} (port ${embedded.port}) of the running npm start`,
    );
    ownerUrl = embedded.connectionString;
    stopEmbedded = embedded.stop;
  }
  // The embedded server asks for passwords: its runtime role gets a generated one, kept in .porter/.
  const password = await resolveAppPassword(env, { home, generate: !env.DATABASE_URL });
  const role = appRoleFor(env, ownerUrl, password);
  const connectionString = options.as === "owner" ? ownerUrl : role.connectionString;
  const pool = createPool(connectionString, { max: 4, applicationName: "porter-cli" });
  const prisma = createPrisma(pool);
  let closed: Promise<void> | undefined;
  const close = () =>
    (closed ??= (async () => {
      await prisma.$disconnect();
      await pool.end();
      await stopEmbedded();
    })());
  if (options.as === "runtime") {
    try {
      const warning = privilegeWarning(await inspectConnectionRole(pool));
      if (warning) options.log(`warning: ${warning}`);
    } catch (error) {
      await close();
      const hint = runtimeLoginHint(error);
      throw hint ? new Error(`${(error as Error).message}: ${hint}`, { cause: error }) : error;
    }
  }
  return { pool, prisma, connectionString, runtimeRole: role.spec, close };
};
