import { relative } from "node:path";
import type pg from "pg";
import { startEmbeddedPostgres } from "@porter/db/embedded";
import { createPool } from "@porter/db/pool";
import { embeddedDataDir, repoRoot } from "./paths";

/** A command's database: a pool, and how to let go of it (stopping an embedded server we started). */
export type CliDatabase = {
  pool: pg.Pool;
  connectionString: string;
  close: () => Promise<void>;
};

/**
 * Connects to `DATABASE_URL`, or when it is unset to the embedded PostgreSQL under
 * `.porter/pg`: the server of a running `npm start` is reused as it is; otherwise one is started
 * for the command's duration and stopped by `close()`.
 */
export const openCliDatabase = async (options: { databaseUrl: string | undefined; log: (message: string) => void }): Promise<CliDatabase> => {
  if (options.databaseUrl) {
    const pool = createPool(options.databaseUrl, { max: 4, applicationName: "porter-cli" });
    return { pool, connectionString: options.databaseUrl, close: () => pool.end() };
  }
  const root = repoRoot();
  const dataDir = embeddedDataDir(root);
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
  const pool = createPool(embedded.connectionString, { max: 4, applicationName: "porter-cli" });
  let closed: Promise<void> | undefined;
  return {
    pool,
    connectionString: embedded.connectionString,
    close: () =>
      (closed ??= (async () => {
        await pool.end();
        await embedded.stop();
      })()),
  };
};
