import { readdirSync, readFileSync } from "node:fs";
import type pg from "pg";

/**
 * utime+stime (clock ticks, 1/100 s) of every postgres process on this machine, and cutime+cstime
 * (the CPU of its children that have ended): PostgreSQL's CPU, server-wide (every database), when
 * the server runs here; 0 when it does not. A backend that ends — a worker's pool closing at the
 * end of a drain — leaves the process list, and its CPU would leave the sum with it (a drain's
 * delta read 0 or below); the postmaster, which reaps it, carries it on in cutime+cstime. With
 * `postmaster`, only that server's processes (its children): on a cluster of one's own, the other
 * work on the machine stays out.
 */
/** A process's /proc/<pid>/stat: its command name and the fields after it (f[1] ppid, f[11] utime …). Throws once it has ended. */
const statOf = (pid: number | string): { name: string; f: string[] } => {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const close = stat.lastIndexOf(")");
  return { name: stat.slice(stat.indexOf("(") + 1, close), f: stat.slice(close + 2).split(" ") };
};

export const pgTicks = (postmaster?: number): number => {
  let sum = 0;
  for (const pid of readdirSync("/proc")) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const { name, f } = statOf(pid);
      if (!name.startsWith("postgres")) continue;
      if (postmaster !== undefined && Number(pid) !== postmaster && Number(f[1]) !== postmaster) continue;
      sum += Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]);
    } catch {
      // the process ended meanwhile
    }
  }
  return sum;
};

/** The postmaster of the server `db` is connected to, when it runs on this machine (for {@link pgTicks}). */
export const postmasterOf = async (db: pg.Pool): Promise<number | undefined> => {
  const { rows } = await db.query<{ pid: number }>("SELECT pg_backend_pid() AS pid");
  try {
    return Number(statOf(rows[0]!.pid).f[1]);
  } catch {
    return undefined;
  }
};

/** utime+stime of one process, in ms (NaN once it has ended). */
export const processCpuMs = (pid: number): number => {
  try {
    const { f } = statOf(pid);
    return (Number(f[11]) + Number(f[12])) * 10;
  } catch {
    return Number.NaN;
  }
};
