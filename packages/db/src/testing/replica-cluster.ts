// A streaming replica of a test's own cluster (restartable-cluster.ts): `pg_basebackup -R` copies
// the primary and writes its standby.signal and primary_conninfo, so the copy starts as a hot
// standby replaying the primary's WAL. The primary needs nothing beyond initdb's defaults on
// PostgreSQL 10+ (wal_level replica, max_wal_senders 10, and pg_hba's `host replication all
// 127.0.0.1/32 trust` line, since restartable clusters are initdb'd with -A trust). As root every
// binary runs as the `postgres` OS user, as for the primary.
import { appendFile } from "node:fs/promises";
import { join } from "node:path";
import { findFreePort } from "../embedded-process";
import { clusterFolder, defaultBinDir, type RestartableCluster, tail } from "./restartable-cluster";

/** A running hot standby of a {@link RestartableCluster}. */
export type ReplicaCluster = {
  /** The replica's copy of the primary's database: `postgres://postgres@127.0.0.1:<port>/<database>`. */
  connectionString: string;
  port: number;
  dataDir: string;
  logFile: string;
  /** `pg_ctl stop -m fast`: the replica is down (its data kept) until {@link ReplicaCluster.start}. */
  stopServer: () => Promise<void>;
  /** Starts it again after {@link ReplicaCluster.stopServer}; it catches up from the primary. */
  start: () => Promise<void>;
  /** Stops the server (immediate) and deletes its data directory. Idempotent. */
  stop: () => Promise<void>;
  tailLog: (lines?: number) => string;
};

/**
 * Base-backs-up `primary` (`pg_basebackup -R -X stream`, a fast checkpoint) into a folder of its
 * own and starts it on a free port as a hot standby. `stop()` removes it, and so does the Node
 * process's exit.
 */
export async function startStreamingReplica(primary: RestartableCluster, opts: { binDir?: string } = {}): Promise<ReplicaCluster> {
  const binDir = opts.binDir ?? process.env.PORTER_PG_BIN ?? defaultBinDir();
  const { root, dataDir, logFile, exec, stopSync } = clusterFolder("porter-pg-replica-", binDir);

  try {
    await exec("pg_basebackup", ["-h", "127.0.0.1", "-p", String(primary.port), "-U", "postgres", "-D", dataDir, "-R", "-X", "stream", "-c", "fast"]);
    const port = await findFreePort();
    // The copied postgresql.conf carries the primary's port and socket folder: the later lines win.
    const conf = [`port = ${port}`, `unix_socket_directories = '${root}'`, "hot_standby = on", "hot_standby_feedback = on"].join("\n");
    await appendFile(join(dataDir, "postgresql.conf"), `\n# replica-cluster.ts\n${conf}\n`);
    const start = () => exec("pg_ctl", ["-D", dataDir, "-l", logFile, "-w", "-t", "60", "start"]);
    await start();
    const database = new URL(primary.connectionString).pathname.slice(1);
    return {
      connectionString: `postgres://postgres@127.0.0.1:${port}/${database}`,
      port,
      dataDir,
      logFile,
      stopServer: () => exec("pg_ctl", ["-D", dataDir, "-m", "fast", "-w", "stop"]),
      start,
      stop: async () => stopSync(),
      tailLog: (lines = 40) => tail(logFile, lines),
    };
  } catch (error) {
    stopSync();
    throw error;
  }
}
