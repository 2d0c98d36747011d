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
export const pgTicks = (postmaster?: number): number => {
  let sum = 0;
  for (const pid of readdirSync("/proc")) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      const close = stat.lastIndexOf(")");
      if (!stat.slice(stat.indexOf("(") + 1, close).startsWith("postgres")) continue;
      const f = stat.slice(close + 2).split(" ");
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
    const stat = readFileSync(`/proc/${rows[0]!.pid}/stat`, "utf8");
    return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
  } catch {
    return undefined;
  }
};

/** utime+stime of one process, in ms (NaN once it has ended). */
export const processCpuMs = (pid: number): number => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(f[11]) + Number(f[12])) * 10;
  } catch {
    return Number.NaN;
  }
};
