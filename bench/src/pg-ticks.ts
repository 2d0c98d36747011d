import { readdirSync, readFileSync } from "node:fs";

/**
 * utime+stime (clock ticks, 1/100 s) of every postgres process on this machine: PostgreSQL's CPU,
 * server-wide (every database), when the server runs here; 0 when it does not.
 */
export const pgTicks = (): number => {
  let sum = 0;
  for (const pid of readdirSync("/proc")) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      const close = stat.lastIndexOf(")");
      if (!stat.slice(stat.indexOf("(") + 1, close).startsWith("postgres")) continue;
      const f = stat.slice(close + 2).split(" ");
      sum += Number(f[11]) + Number(f[12]);
    } catch {
      // the process ended meanwhile
    }
  }
  return sum;
};
