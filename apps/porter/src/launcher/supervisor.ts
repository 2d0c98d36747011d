import { type ChildProcess, spawn } from "node:child_process";
import { forEachLine } from "./prefix";

/** A process the launcher runs. */
export type ChildSpec = {
  /** Shown as the output prefix, e.g. `worker:background`. */
  name: string;
  command: string;
  args: string[];
  cwd: string;
  env: NodeJS.ProcessEnv;
  /** Restart with backoff when it exits on its own; otherwise report the exit through `onExit`. */
  restart: boolean;
};

/** How one run of a child ended. */
export type ChildExit = { code: number | null; signal: NodeJS.Signals | null };

/** A supervised child across its restarts. */
export type ManagedChild = {
  readonly spec: ChildSpec;
  /** Pid of the current process (also its process group id), if one runs. */
  readonly pid: number | undefined;
  /** Lines of output, for callers that wait for a handshake (the embedded PostgreSQL holder). */
  onLine: ((line: string, stream: "stdout" | "stderr") => void) | undefined;
  /** Resolves when the current process exits (immediately when none runs). */
  exited: () => Promise<ChildExit | undefined>;
};

export type SupervisorOptions = {
  /** Receives every line a child prints. */
  output: (name: string, line: string, stream: "stdout" | "stderr") => void;
  /** The supervisor's own notes (exits, restarts, kills). */
  log: (message: string) => void;
  /** Called when a child without `restart` exits while the supervisor is not stopping. */
  onExit?: (child: ManagedChild, exit: ChildExit) => void;
  /** Restart backoff: base, cap, and the uptime after which a child counts as healthy again. */
  backoff?: { baseMs: number; capMs: number; stableMs: number };
};

type Entry = ManagedChild & {
  spec: ChildSpec;
  process: ChildProcess | undefined;
  failures: number;
  startedAt: number;
  timer: NodeJS.Timeout | undefined;
  waiters: Array<(exit: ChildExit) => void>;
};

const describeExit = ({ code, signal }: ChildExit) => (signal ? `signal ${signal}` : `code ${code}`);

/**
 * Runs child processes each in its own process group (`detached`), so a terminal's Ctrl-C
 * reaches only the launcher, which then stops them in order; and so stopping a child stops
 * whatever it spawned. Each child gets a stdin pipe that is never written: it closes when the
 * launcher dies, however it dies, which `parent-guard.mjs` (or the child itself) turns into a
 * graceful stop. Children marked `restart` are restarted after an unexpected exit with
 * exponential backoff (1 s, 2 s, 4 s … 30 s; reset after a minute of uptime).
 */
export class Supervisor {
  private readonly entries: Entry[] = [];
  private isStopping = false;
  private readonly backoff: { baseMs: number; capMs: number; stableMs: number };

  constructor(private readonly options: SupervisorOptions) {
    this.backoff = options.backoff ?? { baseMs: 1_000, capMs: 30_000, stableMs: 60_000 };
  }

  /** Starts a child; it runs until `stop()` (restarting if its spec says so). */
  start(spec: ChildSpec): ManagedChild {
    const entry: Entry = {
      spec,
      process: undefined,
      failures: 0,
      startedAt: 0,
      timer: undefined,
      waiters: [],
      onLine: undefined,
      get pid() {
        return this.process?.pid;
      },
      exited: () => (entry.process ? new Promise<ChildExit>((resolve) => entry.waiters.push(resolve)) : Promise.resolve(undefined)),
    };
    this.entries.push(entry);
    this.spawn(entry);
    return entry;
  }

  private spawn(entry: Entry): void {
    entry.timer = undefined;
    if (this.isStopping) return;
    const { spec } = entry;
    const child = spawn(spec.command, spec.args, { cwd: spec.cwd, env: spec.env, detached: true, stdio: ["pipe", "pipe", "pipe"] });
    entry.process = child;
    entry.startedAt = Date.now();
    child.stdin?.on("error", () => {});
    for (const stream of ["stdout", "stderr"] as const) {
      forEachLine(child[stream]!, (line) => {
        entry.onLine?.(line, stream);
        this.options.output(spec.name, line, stream);
      });
    }
    child.on("error", (error) => this.options.log(`${spec.name}: could not start ${spec.command}: ${error.message}`));
    child.on("exit", (code, signal) => {
      const exit = { code, signal };
      if (entry.process === child) entry.process = undefined;
      // The leader is gone: end whatever it left in its group.
      killGroup(child.pid, "SIGKILL");
      for (const resolve of entry.waiters.splice(0)) resolve(exit);
      if (this.isStopping) return;
      if (!spec.restart) {
        if (exit.code !== 0) this.options.log(`${spec.name} exited (${describeExit(exit)})`);
        this.options.onExit?.(entry, exit);
        return;
      }
      const uptime = Date.now() - entry.startedAt;
      entry.failures = uptime >= this.backoff.stableMs ? 1 : entry.failures + 1;
      const delay = Math.min(this.backoff.capMs, this.backoff.baseMs * 2 ** (entry.failures - 1));
      this.options.log(`${spec.name} exited unexpectedly (${describeExit(exit)}); restarting in ${Math.round(delay / 100) / 10} s`);
      entry.timer = setTimeout(() => this.spawn(entry), delay);
    });
  }

  /** Live children (a process is running). */
  get running(): ManagedChild[] {
    return this.entries.filter((e) => e.process !== undefined);
  }

  /**
   * Stops children (all, or those `only` selects): SIGTERM to each process group, then SIGKILL
   * to those still running after `timeoutMs`. No restart happens once stopping began.
   */
  async stop(options: { timeoutMs: number; only?: (child: ManagedChild) => boolean }): Promise<void> {
    this.isStopping = true;
    const targets = this.entries.filter((e) => !options.only || options.only(e));
    for (const entry of targets) {
      if (entry.timer) clearTimeout(entry.timer);
      entry.timer = undefined;
    }
    const live = targets.filter((e) => e.process);
    const exits = live.map((e) => e.exited());
    for (const entry of live) killGroup(entry.pid, "SIGTERM");
    const timedOut = await Promise.race([Promise.all(exits).then(() => false), delay(options.timeoutMs).then(() => true)]);
    if (!timedOut) return;
    for (const entry of live.filter((e) => e.process)) {
      this.options.log(`${entry.spec.name} did not stop within ${Math.round(options.timeoutMs / 1000)} s: killing it`);
      killGroup(entry.pid, "SIGKILL");
    }
    await Promise.race([Promise.all(exits), delay(5_000)]);
  }

  /** Signals every live group (or those `only` selects) synchronously, e.g. from process 'exit'. */
  signalAll(signal: NodeJS.Signals, only?: (child: ManagedChild) => boolean): void {
    this.isStopping = true;
    for (const entry of this.entries.filter((e) => !only || only(e))) {
      if (entry.timer) clearTimeout(entry.timer);
      killGroup(entry.pid, signal);
    }
  }
}

/** Signals a whole process group; a group that is already gone is fine. */
export const killGroup = (pid: number | undefined, signal: NodeJS.Signals): void => {
  if (!pid) return;
  try {
    process.kill(-pid, signal);
  } catch {
    // ESRCH: nothing left in the group.
  }
};

const delay = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref());
