import { execFile } from "node:child_process";
import { access, readFile } from "node:fs/promises";
import { createServer } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";

/** What the OS says about a pid: gone (or a zombie), or alive with its command name. */
export type ProcessInfo = { isAlive: false } | { isAlive: true; command: string };

/**
 * Looks a pid up without signalling it: `/proc/<pid>/stat` on Linux, `ps` elsewhere. A zombie
 * (exited, not yet reaped, common for orphans in containers whose init does not reap) counts as
 * gone.
 */
export async function inspectProcess(pid: number): Promise<ProcessInfo> {
  if (!Number.isInteger(pid) || pid <= 0) return { isAlive: false };
  try {
    const stat = await readFile(`/proc/${pid}/stat`, "utf8");
    // "<pid> (<comm>) <state> …"; comm may itself contain spaces or parentheses.
    const open = stat.indexOf("(");
    const close = stat.lastIndexOf(")");
    const state = stat.slice(close + 2, close + 3);
    return state === "Z" || state === "X" ? { isAlive: false } : { isAlive: true, command: stat.slice(open + 1, close) };
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ESRCH") {
      // No /proc entry: either the process is gone, or this is not Linux.
      if (await pathExists("/proc/self/stat")) return { isAlive: false };
    }
  }
  return inspectWithPs(pid);
}

function inspectWithPs(pid: number): Promise<ProcessInfo> {
  return new Promise((resolve) => {
    execFile("ps", ["-o", "stat=,comm=", "-p", String(pid)], (error, stdout) => {
      const line = stdout.trim();
      if (error || line === "") return resolve({ isAlive: false });
      const [state = "", ...command] = line.split(/\s+/);
      resolve(state.startsWith("Z") ? { isAlive: false } : { isAlive: true, command: command.join(" ") });
    });
  });
}

async function pathExists(path: string): Promise<boolean> {
  try {
    await access(path);
    return true;
  } catch {
    return false;
  }
}

/** Polls until `pid` is gone; returns false if it is still alive after `timeoutMs`. */
export async function waitForExit(pid: number, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (!(await inspectProcess(pid)).isAlive) return true;
    if (Date.now() >= deadline) return false;
    await sleep(100);
  }
}

/**
 * Stops a PostgreSQL postmaster that is not our child, escalating as pg_ctl would:
 * SIGINT (fast shutdown: what `pg_ctl stop -m fast` sends; pg_ctl itself refuses to run as
 * root), then SIGQUIT (immediate), then SIGKILL. Returns the signal that ended it.
 */
export async function stopPostmaster(pid: number): Promise<NodeJS.Signals> {
  const steps: [NodeJS.Signals, number][] = [
    ["SIGINT", 15_000],
    ["SIGQUIT", 5_000],
    ["SIGKILL", 5_000],
  ];
  for (const [signal, waitMs] of steps) {
    try {
      process.kill(pid, signal);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ESRCH") return signal;
      throw error;
    }
    if (await waitForExit(pid, waitMs)) return signal;
  }
  throw new Error(`could not stop the stale PostgreSQL server (pid ${pid})`);
}

/** True when nothing listens on 127.0.0.1:`port` (checked by binding it briefly). */
export function isPortFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(false));
    server.listen({ port, host: "127.0.0.1", exclusive: true }, () => {
      server.close(() => resolve(true));
    });
  });
}

/** A port the OS considers free right now on 127.0.0.1. */
export function findFreePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen({ port: 0, host: "127.0.0.1" }, () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => (port > 0 ? resolve(port) : reject(new Error("no free port"))));
    });
  });
}
