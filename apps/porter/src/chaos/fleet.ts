// The chaos suite's worker fleet: N real worker processes (apps/worker/src/bin/worker.ts), each
// SIGKILLable and replaced, with every exit, its code and its stderr kept as evidence.
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { type LogLine, spawnWorker, type WorkerProcess } from "@porter/worker/testing/worker-process";
import type pg from "pg";

const run = promisify(execFile);

/** One worker process of the fleet, alive or not. */
export type FleetMember = {
  /** 1-based, in start order (`w3` is the third process started). */
  index: number;
  process: WorkerProcess;
  /** The worker's id (its `workers` row), read from its "worker started" line. */
  workerId: string | undefined;
  startedAt: number;
  /** When it logged "worker started" (registered, claiming). */
  readyAt: number | undefined;
  /** Set when the suite SIGKILLed it. */
  killedAt: number | undefined;
  /** Set when the suite asked it to drain (SIGTERM) at the end. */
  stoppedAt: number | undefined;
  exit: { code: number | null; signal: NodeJS.Signals | null; at: number } | undefined;
  /** Raw stderr (pino writes to stdout: anything here is a crash report or a runtime warning). */
  stderr: string;
};

/** A terminated LISTEN connection and the worker process that held it. */
export type ListenKill = { at: number; backendPid: number; member: FleetMember | undefined; candidates: number };

export type FleetOptions = {
  connectionString: string;
  pool: string;
  size: number;
  /** `--concurrency` of each worker. */
  concurrency: number;
  /** How long a worker may take to log "worker started" (tsx compiles on a loaded machine). */
  startTimeoutMs?: number;
};

/** The LISTEN connection's application_name (apps/worker/src/runtime/listener.ts). */
export const LISTEN_APPLICATION_NAME = "porter-worker-listen";

/** Starts, kills, replaces and finally drains the worker processes of one chaos run. */
export class WorkerFleet {
  readonly members: FleetMember[] = [];
  /** Replacements being started (awaited by `stop`). */
  private readonly starting = new Set<Promise<unknown>>();

  constructor(private readonly options: FleetOptions) {
    // If the suite's own process dies (an uncaught error, Ctrl-C), its workers must not outlive it.
    process.once("exit", () => {
      for (const member of this.members) if (member.process.child.exitCode === null) member.process.child.kill("SIGKILL");
    });
  }

  /** Starts `size` workers and waits until each has logged "worker started". */
  async start(): Promise<void> {
    await Promise.all(Array.from({ length: this.options.size }, () => this.spawn()));
  }

  /** Members whose process has not exited. */
  live(): FleetMember[] {
    return this.members.filter((m) => m.killedAt === undefined && m.process.child.exitCode === null && m.process.child.signalCode === null);
  }

  /** Live members that have started (logged "worker started"). */
  ready(): FleetMember[] {
    return this.live().filter((m) => m.readyAt !== undefined);
  }

  /** Waits until `size` members are ready (a replacement takes seconds to start on a loaded machine). */
  async waitUntilFull(timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (this.ready().length < this.options.size) {
      if (Date.now() > deadline) return false;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    return true;
  }

  /**
   * SIGKILLs a random ready worker and starts its replacement at once (not waiting for it to be
   * ready). Returns the killed member.
   */
  async killOne(random: () => number): Promise<FleetMember | undefined> {
    const candidates = this.ready();
    const victim = candidates[Math.floor(random() * candidates.length)];
    if (!victim) return undefined;
    victim.killedAt = Date.now();
    victim.process.child.kill("SIGKILL");
    await victim.process.exited;
    this.track(this.spawn());
    return victim;
  }

  /**
   * Terminates the LISTEN connection of one live worker (`pg_terminate_backend`), telling the
   * worker's connections apart by application_name and its owner by the TCP port (`ss`).
   */
  async killListenConnection(admin: pg.Pool, database: string, random: () => number): Promise<ListenKill | undefined> {
    const { rows } = await admin.query<{ pid: number; client_port: number }>(
      `SELECT pid, client_port FROM pg_stat_activity WHERE application_name = $1 AND datname = $2`,
      [LISTEN_APPLICATION_NAME, database],
    );
    const ports = await localPortOwners();
    const owners = rows.map((row) => ({ row, member: this.members.find((m) => m.process.child.pid === ports.get(row.client_port)) }));
    // Only a connection whose owner is a live member of this fleet: the kill must be attributable.
    const alive = owners.filter((o) => o.member && o.member.exit === undefined && o.member.killedAt === undefined);
    const chosen = alive[Math.floor(random() * alive.length)];
    if (!chosen) return undefined;
    await admin.query(`SELECT pg_terminate_backend($1)`, [chosen.row.pid]);
    return { at: Date.now(), backendPid: chosen.row.pid, member: chosen.member, candidates: alive.length };
  }

  /** SIGTERMs every live worker (a graceful drain) and waits for all exits, replacements included. */
  async stop(timeoutMs = 30_000): Promise<void> {
    await Promise.allSettled([...this.starting]);
    // bin/worker.ts installs its SIGTERM handler just after "worker started" is logged: a signal
    // in that window kills the process undrained (reported in docs/chaos.md); a drain is asked
    // only of a worker that has been up for a second.
    const newest = Math.max(0, ...this.members.map((m) => m.readyAt ?? 0));
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, newest + 1_000 - Date.now())));
    const live = this.members.filter((m) => m.exit === undefined);
    for (const member of live) {
      member.stoppedAt = Date.now();
      member.process.child.kill("SIGTERM");
    }
    const deadline = new Promise((resolve) => setTimeout(resolve, timeoutMs).unref());
    await Promise.race([Promise.all(live.map((m) => m.process.exited)), deadline]);
    for (const member of live) {
      if (member.exit === undefined) member.process.child.kill("SIGKILL");
    }
    await Promise.all(live.map((m) => m.process.exited));
  }

  /** SIGKILLs whatever still runs (cleanup after a failed run). */
  async killAll(): Promise<void> {
    await Promise.allSettled([...this.starting]);
    for (const member of this.members) if (member.exit === undefined) member.process.child.kill("SIGKILL");
    await Promise.all(this.members.map((m) => m.process.exited));
  }

  /** Exits the suite did not cause: neither its SIGKILL nor its final SIGTERM (or a drain that did not exit 0). */
  unexpectedExits(): FleetMember[] {
    return this.members.filter((m) => {
      if (!m.exit || m.killedAt !== undefined) return false;
      if (m.stoppedAt !== undefined && m.exit.at >= m.stoppedAt) return m.exit.code !== 0;
      return true;
    });
  }

  /** Parsed log lines of every member, each with its member. */
  logs(): Array<{ member: FleetMember; line: LogLine }> {
    return this.members.flatMap((member) => member.process.logs().map((line) => ({ member, line })));
  }

  private track(promise: Promise<unknown>): void {
    const tracked = promise.catch(() => undefined).finally(() => this.starting.delete(tracked));
    this.starting.add(tracked);
  }

  private async spawn(): Promise<FleetMember> {
    const process = spawnWorker({
      connectionString: this.options.connectionString,
      pool: this.options.pool,
      args: ["--concurrency", String(this.options.concurrency)],
    });
    const member: FleetMember = {
      index: this.members.length + 1,
      process,
      workerId: undefined,
      startedAt: Date.now(),
      readyAt: undefined,
      killedAt: undefined,
      stoppedAt: undefined,
      exit: undefined,
      stderr: "",
    };
    this.members.push(member);
    process.child.stderr?.on("data", (chunk: Buffer) => {
      member.stderr += chunk.toString("utf8");
    });
    void process.exited.then((exit) => {
      member.exit = exit;
    });
    const started = await process.waitForLog((line) => line.msg === "worker started", this.options.startTimeoutMs ?? 60_000);
    member.workerId = typeof started.workerId === "string" ? started.workerId : undefined;
    member.readyAt = typeof started.time === "number" ? started.time : Date.now();
    return member;
  }
}

/** Local TCP port → pid of the process owning the socket, from one `ss -tnp` call. */
const localPortOwners = async (): Promise<Map<number, number>> => {
  const owners = new Map<number, number>();
  try {
    const { stdout } = await run("ss", ["-tnpH", "state", "established"]);
    for (const line of stdout.split("\n")) {
      // Recv-Q Send-Q Local:Port Peer:Port users:(("node",pid=123,fd=20))
      const fields = line.trim().split(/\s+/);
      const port = Number(fields[2]?.split(":").pop());
      const pid = Number(/pid=(\d+)/.exec(line)?.[1]);
      if (port && pid) owners.set(port, pid);
    }
  } catch {
    // no ss: no owner known, no kill
  }
  return owners;
};
