// A throwaway PostgreSQL cluster that a crash test may restart with `pg_ctl restart -m immediate`
// (the shared test server on :5432 must never be restarted: other suites run on it). It uses the
// machine's PostgreSQL binaries (PORTER_PG_BIN, default the newest /usr/lib/postgresql/<v>/bin,
// 15 on this machine). initdb
// refuses to run as root, so as root every binary runs as the `postgres` OS user (`runuser`),
// with the data directory in a temp folder that user owns.
import { execFile, execFileSync } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { appendFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import pg from "pg";
import { findFreePort } from "../embedded-process";
import { migrate } from "../migrator";

const run = promisify(execFile);

/** Options of {@link startRestartableCluster}. */
export type RestartableClusterOptions = {
  /** Database created in the cluster and named by `connectionString`. Default `porter`. */
  database?: string;
  /** Apply every migration (packages/db's migrator) to `database`. Default `false`. */
  isMigrated?: boolean;
  /** Extra `postgresql.conf` settings, e.g. `{ max_connections: "300" }`. */
  settings?: Record<string, string>;
  /** Directory of `initdb`/`pg_ctl`. Default PORTER_PG_BIN, else the newest /usr/lib/postgresql/<v>/bin. */
  binDir?: string;
};

/** A running throwaway cluster (trust auth, 127.0.0.1 only, fsync on). */
export type RestartableCluster = {
  /** `postgres://postgres@127.0.0.1:<port>/<database>` */
  connectionString: string;
  /** The same server's `postgres` database (for CREATE DATABASE and the like). */
  adminUrl: string;
  port: number;
  dataDir: string;
  /** The server's log file (useful in failure messages). */
  logFile: string;
  /**
   * `pg_ctl restart -m immediate`: every backend dies without a checkpoint (as in a power cut,
   * minus the OS page cache), the server runs crash recovery from WAL and accepts connections
   * again before this resolves. Whatever was not flushed to WAL is gone.
   */
  restartImmediate: () => Promise<void>;
  /** Stops the server (immediate) and deletes its data directory. Idempotent. */
  stop: () => Promise<void>;
  /** The last `lines` lines of the server log. */
  tailLog: (lines?: number) => string;
  /** `pg_dump -Fc` of `database` into `file` (evidence of a failed run; restore with pg_restore). */
  dump: (file: string) => Promise<void>;
};

/** The newest Debian-layout PostgreSQL install that has initdb. */
export function defaultBinDir(): string {
  const root = "/usr/lib/postgresql";
  const versions = existsSync(root)
    ? readdirSync(root)
        .filter((v) => existsSync(join(root, v, "bin", "initdb")))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  if (!versions[0]) {
    throw new Error(`no PostgreSQL server binaries in ${root}/<version>/bin (apt-get install postgresql), or set PORTER_PG_BIN`);
  }
  return join(root, versions[0], "bin");
}

/**
 * Creates (initdb, ~1 s) and starts a PostgreSQL cluster of its own on a free port. Settings
 * give real durability semantics (`fsync = on`, `synchronous_commit = on`, full page writes),
 * so a test that restarts it immediately sees what a crash loses. The server is stopped and its
 * directory removed by `stop()`, and also when the Node process exits (a SIGKILLed Node process
 * leaves it behind: it is a temp directory `porter-pg-*`).
 */
export async function startRestartableCluster(opts: RestartableClusterOptions = {}): Promise<RestartableCluster> {
  const binDir = opts.binDir ?? process.env.PORTER_PG_BIN ?? defaultBinDir();
  const database = opts.database ?? "porter";
  const { root, dataDir, logFile, exec, stopSync } = clusterFolder("porter-pg-", binDir);

  try {
    await exec("initdb", ["-D", dataDir, "-U", "postgres", "-A", "trust", "--encoding=UTF8", "--locale=C"]);
    const port = await findFreePort();
    const settings: Record<string, string> = {
      port: String(port),
      listen_addresses: "'127.0.0.1'",
      // The socket lives in the cluster's own folder: nothing shared in /tmp or /var/run.
      unix_socket_directories: `'${root}'`,
      fsync: "on",
      synchronous_commit: "on",
      full_page_writes: "on",
      max_connections: "200",
      ...opts.settings,
    };
    const conf = Object.entries(settings)
      .map(([name, value]) => `${name} = ${value}`)
      .join("\n");
    await appendFile(join(dataDir, "postgresql.conf"), `\n# restartable-cluster.ts\n${conf}\n`);
    await exec("pg_ctl", ["-D", dataDir, "-l", logFile, "-w", "-t", "60", "start"]);

    const adminUrl = `postgres://postgres@127.0.0.1:${port}/postgres`;
    const connectionString = `postgres://postgres@127.0.0.1:${port}/${encodeURIComponent(database)}`;
    if (database !== "postgres") {
      const client = new pg.Client({ connectionString: adminUrl, application_name: "porter-test-cluster" });
      await client.connect();
      try {
        await client.query(`CREATE DATABASE ${client.escapeIdentifier(database)}`);
      } finally {
        await client.end();
      }
    }
    if (opts.isMigrated) await migrate(connectionString);

    return {
      connectionString,
      adminUrl,
      port,
      dataDir,
      logFile,
      restartImmediate: () => exec("pg_ctl", ["-D", dataDir, "-l", logFile, "-m", "immediate", "-w", "-t", "120", "restart"]),
      stop: async () => stopSync(),
      tailLog: (lines = 40) => tail(logFile, lines),
      dump: async (file) => {
        await run(join(binDir, "pg_dump"), ["-Fc", "-f", file, connectionString], { timeout: 120_000 });
      },
    };
  } catch (error) {
    stopSync();
    throw error;
  }
}

/** A cluster's temp folder and how to run its binaries: what every throwaway cluster shares. */
export type ClusterFolder = {
  root: string;
  dataDir: string;
  logFile: string;
  /** Runs `bin` of the binaries' directory (as the `postgres` OS user when root); a failure carries the log's tail. */
  exec: (bin: string, args: string[]) => Promise<void>;
  /** Stops the server there (immediate) if it runs and deletes the folder; also at the process's exit. Idempotent. */
  stopSync: () => void;
};

/**
 * A temp folder `<prefix>*` for one cluster (owned by the `postgres` OS user when this process is
 * root, as initdb and pg_ctl refuse root), with its data directory and log file paths, the runner
 * of its binaries, and its removal (registered for the process's exit).
 */
export function clusterFolder(prefix: string, binDir: string): ClusterFolder {
  const isRoot = process.getuid?.() === 0;
  const root = mkdtempSync(join(tmpdir(), prefix));
  const dataDir = join(root, "data");
  const logFile = join(root, "server.log");
  if (isRoot) chownSync(root, ...postgresIds());
  const asOwner = (bin: string, args: string[]) =>
    isRoot ? (["runuser", ["-u", "postgres", "--", join(binDir, bin), ...args]] as const) : ([join(binDir, bin), args] as const);
  const exec = async (bin: string, args: string[]) => {
    const [file, argv] = asOwner(bin, args);
    try {
      await run(file, [...argv], { timeout: 120_000 });
    } catch (error) {
      throw new Error(`${bin} ${args.join(" ")} failed: ${(error as Error).message}\n${tail(logFile, 30)}`, { cause: error });
    }
  };
  let isStopped = false;
  const stopSync = () => {
    if (isStopped) return;
    isStopped = true;
    process.removeListener("exit", stopSync);
    try {
      if (existsSync(join(dataDir, "postmaster.pid"))) {
        const [file, argv] = asOwner("pg_ctl", ["-D", dataDir, "-m", "immediate", "-w", "stop"]);
        execFileSync(file, [...argv], { stdio: "ignore", timeout: 30_000 });
      }
    } catch {
      // already down
    }
    rmSync(root, { recursive: true, force: true });
  };
  process.on("exit", stopSync);
  return { root, dataDir, logFile, exec, stopSync };
}

/** The `postgres` OS user's uid and gid (the owner of a cluster started as root). */
export function postgresIds(): [number, number] {
  const line = readFileSync("/etc/passwd", "utf8")
    .split("\n")
    .find((entry) => entry.startsWith("postgres:"));
  const fields = line?.split(":");
  if (!fields) throw new Error("running as root needs a `postgres` OS user to own the cluster (initdb refuses root)");
  return [Number(fields[2]), Number(fields[3])];
}

/** The last `lines` lines of `file` ("" when unreadable). */
export function tail(file: string, lines: number): string {
  try {
    return readFileSync(file, "utf8").split("\n").slice(-lines).join("\n");
  } catch {
    return "";
  }
}
