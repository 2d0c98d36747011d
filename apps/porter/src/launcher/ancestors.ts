import { readFileSync } from "node:fs";

/** Parent pid of `pid` from /proc (Linux), or undefined when unknown or gone. */
const parentOf = (pid: number): number | undefined => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // "<pid> (<comm>) <state> <ppid> …"; comm may contain spaces or parentheses.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (fields[0] === "Z" || fields[0] === "X") return undefined;
    const ppid = Number(fields[1]);
    return Number.isInteger(ppid) ? ppid : undefined;
  } catch {
    return undefined;
  }
};

const isAlive = (pid: number): boolean => parentOf(pid) !== undefined;

/**
 * Calls `onGone` once when a process that started this one (up to `depth` ancestors: under
 * `npm start` that is tsx, sh and npm) has exited. `npm` answers a SIGTERM by killing its shell,
 * which does not pass the signal on: without this, the launcher and its children would keep
 * running, orphaned. Linux only (/proc); elsewhere it does nothing. Returns a stop function.
 */
export const watchAncestors = (onGone: (pid: number) => void, options: { depth?: number; intervalMs?: number } = {}): (() => void) => {
  const chain: number[] = [];
  for (let pid = process.ppid; chain.length < (options.depth ?? 3) && pid > 1; ) {
    chain.push(pid);
    const parent = parentOf(pid);
    if (parent === undefined) break;
    pid = parent;
  }
  if (chain.length === 0) return () => {};
  const timer = setInterval(() => {
    const gone = chain.find((pid) => !isAlive(pid));
    if (gone !== undefined) {
      clearInterval(timer);
      onGone(gone);
    }
  }, options.intervalMs ?? 1_000);
  timer.unref();
  return () => clearInterval(timer);
};
