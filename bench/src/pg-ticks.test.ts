import { describe, expect, it } from "vitest";
import { type ProcEntry, type ProcTable, ticksOf } from "./pg-ticks";

/**
 * A process table that changes while it is read: `onRead` runs before each read, so a test can end
 * and reap a backend between two of them, as a worker's pool closing does during a real reading.
 */
const table = (procs: Map<number, ProcEntry>, onRead: (pid: number, reads: number) => void = () => undefined): ProcTable => {
  let reads = 0;
  return {
    pids: () => [...procs.keys()].sort((a, b) => a - b),
    read: (pid) => {
      onRead(pid, reads++);
      const entry = procs.get(pid);
      return entry ? { ...entry } : undefined;
    },
  };
};

/** The postmaster (pid 10) reaps `pid`: the child's CPU moves into the postmaster's children's. */
const reap = (procs: Map<number, ProcEntry>, pid: number) => {
  const child = procs.get(pid)!;
  procs.delete(pid);
  const master = procs.get(10)!;
  procs.set(10, { ...master, childTicks: master.childTicks + child.ticks + child.childTicks });
};

const server = () =>
  new Map<number, ProcEntry>([
    [1, { name: "init", ppid: 0, ticks: 5000, childTicks: 0 }],
    [10, { name: "postgres", ppid: 1, ticks: 3, childTicks: 100 }],
    [11, { name: "postgres", ppid: 10, ticks: 40, childTicks: 0 }],
    [12, { name: "postgres", ppid: 10, ticks: 70, childTicks: 0 }],
    [20, { name: "node", ppid: 1, ticks: 900, childTicks: 0 }],
  ]);

describe("PostgreSQL's CPU read off the process table", () => {
  it("sums the server's processes and the children it has reaped, nothing else", () => {
    expect(ticksOf(table(server()))).toBe(3 + 100 + 40 + 70);
    expect(ticksOf(table(server()), 10)).toBe(3 + 100 + 40 + 70);
  });

  it("counts a backend reaped in the middle of the reading once", () => {
    // Every moment of the reading at which backend 12 can be reaped gives the same sum.
    // A reading of this table reads each process once and the postmaster and the children again: < 20.
    for (let at = 0; at < 20; at += 1) {
      const procs = server();
      const sum = ticksOf(
        table(procs, (_pid, n) => {
          if (n === at && procs.has(12)) reap(procs, 12);
        }),
      );
      expect({ at, sum }).toEqual({ at, sum: 3 + 100 + 40 + 70 });
    }
  });

  it("counts the backends of a pool that closes all at once during the reading", () => {
    const procs = server();
    for (let pid = 100; pid < 126; pid += 1) procs.set(pid, { name: "postgres", ppid: 10, ticks: 50, childTicks: 0 });
    const sum = ticksOf(
      table(procs, (pid) => {
        // The pool closes once the reading has passed the postmaster's line.
        if (pid === 100) for (let p = 100; p < 126; p += 1) reap(procs, p);
      }),
    );
    expect(sum).toBe(3 + 100 + 40 + 70 + 26 * 50);
  });

  it("leaves out the processes of another server when told which postmaster to read", () => {
    const procs = server();
    procs.set(30, { name: "postgres", ppid: 1, ticks: 8, childTicks: 1000 });
    procs.set(31, { name: "postgres", ppid: 30, ticks: 500, childTicks: 0 });
    expect(ticksOf(table(procs), 10)).toBe(3 + 100 + 40 + 70);
    expect(ticksOf(table(procs))).toBe(3 + 100 + 40 + 70 + 8 + 1000 + 500);
  });
});
