import { readdirSync, readFileSync } from "node:fs";
import type pg from "pg";

/** A process's /proc/<pid>/stat: its command name and the fields after it (f[1] ppid, f[11] utime …). Throws once it has ended. */
const statOf = (pid: number | string): { name: string; f: string[] } => {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const close = stat.lastIndexOf(")");
  return { name: stat.slice(stat.indexOf("(") + 1, close), f: stat.slice(close + 2).split(" ") };
};

/** One process as {@link ticksOf} reads it: its own CPU and its ended children's, in clock ticks. */
export type ProcEntry = { name: string; ppid: number; ticks: number; childTicks: number };

/** The process table: its pids, and one process (undefined once it has ended and been reaped). */
export type ProcTable = { pids: () => number[]; read: (pid: number) => ProcEntry | undefined };

const procfs: ProcTable = {
  pids: () =>
    readdirSync("/proc")
      .filter((name) => /^\d+$/.test(name))
      .map(Number),
  read: (pid) => {
    try {
      const { name, f } = statOf(pid);
      return { name, ppid: Number(f[1]), ticks: Number(f[11]) + Number(f[12]), childTicks: Number(f[13]) + Number(f[14]) };
    } catch {
      return undefined;
    }
  },
};

/**
 * utime+stime (clock ticks, 1/100 s) of every postgres process in `table`, and cutime+cstime (the
 * CPU of its children that have ended). A backend that ends — a worker's pool closing at the end of
 * a drain — leaves the process list, and its postmaster, which reaps it, carries its CPU on in
 * cutime+cstime. The reading races those exits: a drain's pool of 26 backends closes while it reads.
 * Read postmaster-first, a backend reaped between the postmaster's line and its own was in neither
 * (a (c) row read 2.8–7.5 µs of PostgreSQL CPU per job where its other runs read 40–60). So the
 * children are listed first; then the postmasters are read, each child checked, and the postmasters
 * read again, until no child was reaped between those two readings: a child gone at its check is in
 * the postmaster's children's CPU and left out, one still there is counted (its CPU as first read:
 * what it used during the reading is left out, as a process that started during it is). With
 * `postmaster`, only that server's processes (its children): on a cluster of one's own, the other
 * work on the machine stays out; without it, every server's (a postmaster: a postgres process whose
 * parent is not one).
 */
export const ticksOf = (table: ProcTable, postmaster?: number): number => {
  const seen = new Map<number, ProcEntry>();
  for (const pid of table.pids()) {
    const entry = table.read(pid);
    if (entry?.name.startsWith("postgres")) seen.set(pid, entry);
  }
  const isMaster = (pid: number, entry: ProcEntry) => (postmaster === undefined ? !seen.has(entry.ppid) : pid === postmaster);
  const masters = [...seen].filter(([pid, entry]) => isMaster(pid, entry)).map(([pid]) => pid);
  const children = [...seen].filter(([pid, entry]) => !masters.includes(pid) && (postmaster === undefined || entry.ppid === postmaster));
  const readMasters = () =>
    masters
      .map((pid) => table.read(pid) ?? seen.get(pid)!)
      .reduce((sum, m) => ({ own: sum.own + m.ticks, reaped: sum.reaped + m.childTicks }), { own: 0, reaped: 0 });
  // Until no child was reaped between two readings of the postmasters: then each child the check
  // finds gone is in both readings' children's CPU, and each it finds alive in neither.
  for (let round = 0; ; round += 1) {
    const first = readMasters();
    const alive = children.filter(([pid]) => table.read(pid) !== undefined);
    const second = readMasters();
    if (second.reaped === first.reaped || round === 20) {
      return alive.reduce((sum, [, entry]) => sum + entry.ticks + entry.childTicks, second.own + second.reaped);
    }
  }
};

/** {@link ticksOf} this machine's processes. */
export const pgTicks = (postmaster?: number): number => ticksOf(procfs, postmaster);

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
