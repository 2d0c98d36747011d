// The harness's database side: a PostgreSQL cluster of its own listening on the bridge (so it can
// be restarted), pg_stat_statements loaded, the demo configuration seeded; its processes' CPU time;
// PgBouncer in transaction mode in front of it.
import { type ChildProcess, execFile, execFileSync, spawn } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { appendFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { findFreePort } from "@porter/db/embedded-process";
import { type RestartableCluster, startRestartableCluster } from "@porter/db/testing/restartable-cluster";
import pg from "pg";
import { BRIDGE_ADDRESS, SUBNET } from "./netns";

const run = promisify(execFile);
const REPO_ROOT = fileURLToPath(new URL("../../../", import.meta.url));
/** What a killed run left behind (its cluster's data directory, PgBouncer's pid), cleaned at the next start. */
const STATE_FILE = join(tmpdir(), "porter-scale-state.json");
type State = { clusterRoot?: string; pgbouncerPid?: number; pgbouncerDir?: string };

const readState = (): State => {
  try {
    return JSON.parse(readFileSync(STATE_FILE, "utf8")) as State;
  } catch {
    return {};
  }
};
const writeState = (patch: State) => writeFileSync(STATE_FILE, JSON.stringify({ ...readState(), ...patch }));

/** Stops what a killed run left (its PostgreSQL cluster and PgBouncer) and forgets it. */
export const cleanStaleRun = (): string[] => {
  const state = readState();
  const cleaned: string[] = [];
  if (state.pgbouncerPid) {
    try {
      process.kill(state.pgbouncerPid, "SIGKILL");
      cleaned.push(`PgBouncer (pid ${state.pgbouncerPid})`);
    } catch {
      // gone
    }
  }
  if (state.pgbouncerDir) rmSync(state.pgbouncerDir, { recursive: true, force: true });
  if (state.clusterRoot && existsSync(state.clusterRoot)) {
    const dataDir = join(state.clusterRoot, "data");
    if (existsSync(join(dataDir, "postmaster.pid"))) {
      try {
        execFileSync("runuser", ["-u", "postgres", "--", pgBin("pg_ctl"), "-D", dataDir, "-m", "immediate", "-w", "stop"], {
          stdio: "ignore",
          timeout: 30_000,
        });
        cleaned.push(`PostgreSQL cluster ${dataDir}`);
      } catch {
        // not running
      }
    }
    rmSync(state.clusterRoot, { recursive: true, force: true });
  }
  rmSync(STATE_FILE, { force: true });
  return cleaned;
};

const pgBin = (name: string): string => {
  const root = "/usr/lib/postgresql";
  const version = readdirSync(root)
    .filter((v) => existsSync(join(root, v, "bin", name)))
    .sort((a, b) => Number(b) - Number(a))[0];
  return join(root, version ?? "15", "bin", name);
};

export type ScaleDatabase = {
  cluster: RestartableCluster;
  /** postgres://postgres@BRIDGE_ADDRESS:port/porter — what the hosts use. */
  url: string;
  /** The harness's own pool (measurements, preload). */
  db: pg.Pool;
  /** CPU seconds the cluster's processes used so far (the postmaster, its children, and the children it reaped). */
  cpuSeconds: () => number;
};

/** initdb, start on the bridge, pg_hba for the subnet, migrate, seed the demo configuration (the CLI's `seed`). */
export const startDatabase = async (progress: (line: string) => void): Promise<ScaleDatabase> => {
  const cluster = await startRestartableCluster({
    isMigrated: true,
    settings: {
      listen_addresses: `'127.0.0.1,${BRIDGE_ADDRESS}'`,
      max_connections: "400",
      shared_preload_libraries: "'pg_stat_statements'",
      "pg_stat_statements.track": "top",
      shared_buffers: "256MB",
      // A host cut off while it holds the maintenance leadership keeps its session lock until the
      // server drops its connection: without keepalives that is the OS default, two hours, for an
      // idle one. Keepalives only probe an idle connection: one the server was answering at the
      // cut (the leader's passes run every few seconds) waits on retransmissions instead, ~15 min
      // by default; tcp_user_timeout bounds that (seen: a run where no host took over within 15 s).
      tcp_keepalives_idle: "2",
      tcp_keepalives_interval: "1",
      tcp_keepalives_count: "3",
      tcp_user_timeout: "5000",
    },
  });
  writeState({ clusterRoot: join(cluster.dataDir, "..") });
  await appendFile(join(cluster.dataDir, "pg_hba.conf"), `\n# npm run scale: the test hosts on the harness's bridge\nhost all all ${SUBNET} trust\n`);
  const admin = new pg.Client({ connectionString: cluster.connectionString, application_name: "porter-scale" });
  await admin.connect();
  await admin.query("SELECT pg_reload_conf()");
  await admin.query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
  await admin.end();
  const url = `postgres://postgres@${BRIDGE_ADDRESS}:${cluster.port}/porter`;
  progress(`PostgreSQL ${cluster.port} on ${BRIDGE_ADDRESS}, migrated; seeding the demo configuration`);
  await run(process.execPath, ["--import", "tsx", join(REPO_ROOT, "apps/porter/src/bin/porter.ts"), "seed", "--json"], {
    cwd: REPO_ROOT,
    env: { ...process.env, DATABASE_URL: url, PORTER_ADMIN_PASSWORD: "scale-harness-admin", LOG_LEVEL: "warn" },
    timeout: 180_000,
  });
  const db = new pg.Pool({ connectionString: url, max: 4, application_name: "porter-scale" });
  db.on("error", () => undefined);
  const clockTicks = Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
  const cpuSeconds = () => {
    const postmaster = Number(readFileSync(join(cluster.dataDir, "postmaster.pid"), "utf8").split("\n")[0]);
    let ticks = 0;
    for (const entry of readdirSync("/proc")) {
      if (!/^\d+$/.test(entry)) continue;
      let stat: string;
      try {
        stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      } catch {
        continue;
      }
      // Fields after the command (which may hold spaces): state ppid … utime(14) stime(15) cutime(16) cstime(17).
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      const [ppid, utime, stime, cutime, cstime] = [fields[1], fields[11], fields[12], fields[13], fields[14]].map(Number) as [
        number,
        number,
        number,
        number,
        number,
      ];
      if (Number(entry) === postmaster) ticks += utime + stime + cutime + cstime;
      else if (ppid === postmaster) ticks += utime + stime;
    }
    return ticks / clockTicks;
  };
  return { cluster, url, db, cpuSeconds };
};

export type PgBouncer = { url: string; adminUrl: string; stop: () => Promise<void> };

/** Installs Debian's pgbouncer when it is missing (root with apt only), as .ci/run does for prometheus. */
export const ensurePgBouncer = (progress: (line: string) => void): string => {
  const found = ["/usr/sbin/pgbouncer", "/usr/bin/pgbouncer"].find((p) => existsSync(p));
  if (found) return found;
  progress("pgbouncer missing: apt-get install -y pgbouncer");
  try {
    execFileSync("apt-get", ["install", "-y", "pgbouncer"], { stdio: "ignore", timeout: 300_000 });
  } catch {
    execFileSync("apt-get", ["update"], { stdio: "ignore", timeout: 300_000 });
    execFileSync("apt-get", ["install", "-y", "pgbouncer"], { stdio: "ignore", timeout: 300_000 });
  }
  const installed = ["/usr/sbin/pgbouncer", "/usr/bin/pgbouncer"].find((p) => existsSync(p));
  if (!installed) throw new Error("pgbouncer could not be installed (apt-get install -y pgbouncer)");
  return installed;
};

/**
 * PgBouncer in transaction mode on the bridge, `serverConnections` server connections to the
 * cluster for the `porter` database; run as the postgres user (it refuses root).
 */
export const startPgBouncer = async (binary: string, cluster: RestartableCluster, serverConnections: number): Promise<PgBouncer> => {
  const dir = mkdtempSync(join(tmpdir(), "porter-scale-pgbouncer-"));
  const [uid, gid] = postgresIds();
  chownSync(dir, uid, gid);
  const port = await findFreePort();
  writeFileSync(join(dir, "userlist.txt"), `"postgres" ""\n`);
  writeFileSync(
    join(dir, "pgbouncer.ini"),
    [
      "[databases]",
      `porter = host=${BRIDGE_ADDRESS} port=${cluster.port} dbname=porter user=postgres`,
      "[pgbouncer]",
      `listen_addr = ${BRIDGE_ADDRESS}`,
      `listen_port = ${port}`,
      "unix_socket_dir =",
      "auth_type = trust",
      `auth_file = ${join(dir, "userlist.txt")}`,
      "admin_users = postgres",
      "pool_mode = transaction",
      `default_pool_size = ${serverConnections}`,
      "max_client_conn = 2000",
      "server_reset_query =",
      "ignore_startup_parameters = extra_float_digits,options",
      `logfile = ${join(dir, "pgbouncer.log")}`,
      `pidfile = ${join(dir, "pgbouncer.pid")}`,
      "",
    ].join("\n"),
  );
  for (const f of ["userlist.txt", "pgbouncer.ini"]) chownSync(join(dir, f), uid, gid);
  const child: ChildProcess = spawn("runuser", ["-u", "postgres", "--", binary, join(dir, "pgbouncer.ini")], { stdio: "ignore" });
  const adminUrl = `postgres://postgres@${BRIDGE_ADDRESS}:${port}/pgbouncer`;
  let pid: number | undefined;
  for (let i = 0; i < 100 && pid === undefined; i++) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    try {
      pid = Number(readFileSync(join(dir, "pgbouncer.pid"), "utf8").trim()) || undefined;
    } catch {
      // not yet
    }
  }
  if (pid === undefined) throw new Error(`pgbouncer did not start: ${tail(join(dir, "pgbouncer.log"))}`);
  writeState({ pgbouncerPid: pid, pgbouncerDir: dir });
  return {
    url: `postgres://postgres@${BRIDGE_ADDRESS}:${port}/porter`,
    adminUrl,
    stop: async () => {
      try {
        process.kill(pid, "SIGTERM");
      } catch {
        // gone
      }
      child.kill("SIGTERM");
      await new Promise((resolve) => setTimeout(resolve, 300));
      rmSync(dir, { recursive: true, force: true });
      writeState({ pgbouncerPid: undefined, pgbouncerDir: undefined });
    },
  };
};

/** PgBouncer's own count of client connections (its admin console's SHOW POOLS). */
export const pgbouncerClients = async (adminUrl: string): Promise<{ clients: number; servers: number }> => {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const { rows } = await client.query<Record<string, string>>("SHOW POOLS");
    const porter = rows.filter((r) => r.database === "porter");
    const sum = (keys: string[]) => porter.reduce((a, r) => a + keys.reduce((b, k) => b + Number(r[k] ?? 0), 0), 0);
    return { clients: sum(["cl_active", "cl_waiting"]), servers: sum(["sv_active", "sv_idle", "sv_used", "sv_tested", "sv_login"]) };
  } finally {
    await client.end();
  }
};

function postgresIds(): [number, number] {
  const fields = readFileSync("/etc/passwd", "utf8")
    .split("\n")
    .find((l) => l.startsWith("postgres:"))
    ?.split(":");
  if (!fields) throw new Error("no postgres OS user");
  return [Number(fields[2]), Number(fields[3])];
}

function tail(file: string): string {
  try {
    return readFileSync(file, "utf8").split("\n").slice(-10).join("\n");
  } catch {
    return "";
  }
}
