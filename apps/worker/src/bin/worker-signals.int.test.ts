// Issue 9, defect 15: signals through `npm run worker`, a process group's kill, and the
// `porter-worker` bin entry. Real processes: npm, the worker, PostgreSQL.
import { accessSync, constants, readdirSync, readFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { createPool } from "@porter/db/pool";
import { useTestDatabase } from "@porter/db/testing/test-database";
import type pg from "pg";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createDiagPlane, enqueue, waitFor } from "../testing/fixtures";
import { PORTER_WORKER_BIN, spawnWorker, type WorkerLaunch, type WorkerProcess } from "../testing/worker-process";

const testDb = useTestDatabase();
let db: pg.Pool;
let pool: string;
const groups: number[] = [];
const spawned: WorkerProcess[] = [];

/** Live (not zombie) processes of process group `pgid`, from /proc. */
const groupMembers = (pgid: number): number[] =>
  readdirSync("/proc")
    .filter((name) => /^\d+$/.test(name))
    .flatMap((pid) => {
      try {
        // `pid (comm) state ppid pgrp …`; comm may hold spaces and parentheses.
        const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
        const [state, , pgrp] = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
        return Number(pgrp) === pgid && state !== "Z" ? [Number(pid)] : [];
      } catch {
        return []; // exited meanwhile
      }
    });

const succeededCount = async (): Promise<number> =>
  Number((await db.query<{ n: string }>(`SELECT count(*) AS n FROM finished_jobs WHERE state = 'SUCCEEDED'`)).rows[0]!.n);

const start = async (via: WorkerLaunch) => {
  // A group of its own, as under a supervisor or a terminal: the test can signal all of it.
  const worker = spawnWorker({ connectionString: testDb.connectionString, pool, via, detached: true, args: ["--concurrency", "4", "--grace-ms", "20000"] });
  spawned.push(worker);
  groups.push(worker.child.pid!);
  const started = await worker.waitForLog((line) => line.msg === "worker started", 60_000);
  // 300 ms jobs, 4 at a time: some are always running when the signal comes.
  await enqueue(
    db,
    Array.from({ length: 200 }, () => ({ type: "diag.sleep", payload: { ms: 300 } })),
  );
  await waitFor("8 jobs done", async () => (await succeededCount()) >= 8, { timeoutMs: 30_000 });
  return { worker, workerId: started.workerId as string, pgid: worker.child.pid! };
};

/** After the signal: one drain that finished the running jobs, the row marked stopped, nothing runs on. */
const expectOneCleanDrain = async (worker: WorkerProcess, workerId: string, pgid: number) => {
  const exit = await worker.exited;
  expect(exit.code).toBe(0);
  // Nothing of the group is left: no orphaned worker carries on behind npm's back.
  await waitFor("the process group to be gone", () => groupMembers(pgid).length === 0, { timeoutMs: 5_000 }).catch(() => undefined);
  expect(groupMembers(pgid)).toEqual([]);

  const { rows } = await db.query<{ stopped: boolean; running: number }>(`SELECT stopped_at IS NOT NULL AS stopped, running FROM workers WHERE id = $1`, [
    workerId,
  ]);
  expect(rows[0]).toEqual({ stopped: true, running: 0 });

  const logs = worker.logs();
  expect(logs.filter((line) => line.msg === "signal received: draining")).toHaveLength(1);
  expect(logs.some((line) => line.msg === "second signal: handing back unfinished work now")).toBe(false);
  // The jobs running at the signal finished within the grace: none was handed back by a forced stop.
  const drained = logs.find((line) => line.msg === "drained; exiting");
  expect(drained).toMatchObject({ handedBack: 0 });

  // No job runs after the worker is gone.
  const done = await succeededCount();
  await sleep(1_500);
  expect(await succeededCount()).toBe(done);
  const running = await db.query(`SELECT 1 FROM jobs WHERE state = 'RUNNING'`);
  expect(running.rowCount).toBe(0);
};

beforeAll(async () => {
  db = createPool(testDb.connectionString, { max: 4 });
  pool = await createDiagPlane(db, { queue: { lease_seconds: 30 } });
});

afterEach(async () => {
  for (const pgid of groups.splice(0)) {
    try {
      process.kill(-pgid, "SIGKILL");
    } catch {
      // already gone
    }
  }
  for (const worker of spawned.splice(0)) await worker.exited;
  await db.query(`DELETE FROM jobs`);
});

afterAll(async () => {
  await db.end();
});

describe("stop signals reach the worker however it was started", () => {
  it("SIGTERM to the npm process of `npm run worker`: the worker drains, is marked stopped, and no job runs after", async () => {
    const { worker, workerId, pgid } = await start("npm");
    process.kill(pgid, "SIGTERM"); // npm itself, as `kill <pid of npm>` does
    await expectOneCleanDrain(worker, workerId, pgid);
  });

  it("SIGTERM to the whole process group of `npm run worker` (systemd's default): one drain, a clean exit", async () => {
    const { worker, workerId, pgid } = await start("npm");
    process.kill(-pgid, "SIGTERM"); // npm and the worker both get it; npm relays its copy
    await expectOneCleanDrain(worker, workerId, pgid);
  });

  it("the `porter-worker` bin entry, run directly from another directory: SIGTERM drains it and it exits 0", async () => {
    const pkg = JSON.parse(readFileSync(fileURLToPath(new URL("../../package.json", import.meta.url)), "utf8")) as { bin: Record<string, string> };
    expect(fileURLToPath(new URL(`../../${pkg.bin["porter-worker"]}`, import.meta.url))).toBe(PORTER_WORKER_BIN);
    accessSync(PORTER_WORKER_BIN, constants.X_OK);

    const { worker, workerId, pgid } = await start("bin");
    process.kill(-pgid, "SIGTERM");
    await expectOneCleanDrain(worker, workerId, pgid);
  });

  it("a SIGTERM while the worker is still starting (here: waiting on a lock) is kept: it drains once up and exits 0", async () => {
    // The worker registers its row while another session holds the workers table: its start waits,
    // as it does on a restarting database, with its signal handlers already installed.
    const locker = await db.connect();
    try {
      await locker.query("BEGIN");
      await locker.query("LOCK TABLE workers IN ACCESS EXCLUSIVE MODE");
      const worker = spawnWorker({ connectionString: testDb.connectionString, pool, via: "bin", detached: true, args: ["--concurrency", "2"] });
      spawned.push(worker);
      groups.push(worker.child.pid!);
      await waitFor(
        "the starting worker to wait on the lock",
        async () =>
          ((await db.query(`SELECT 1 FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'`, [`porter-worker:${pool}`])).rowCount ?? 0)
          > 0,
        { timeoutMs: 60_000 },
      );
      worker.child.kill("SIGTERM");
      await sleep(300);
      await locker.query("ROLLBACK");
      const exit = await worker.exited;
      expect(exit).toMatchObject({ code: 0 });
      const logs = worker.logs();
      expect(logs.some((line) => line.msg === "signal received while starting: draining once started")).toBe(true);
      expect(logs.some((line) => line.msg === "drained; exiting")).toBe(true);
      const started = logs.find((line) => line.msg === "worker started");
      const { rows } = await db.query<{ stopped: boolean }>(`SELECT stopped_at IS NOT NULL AS stopped FROM workers WHERE id = $1`, [started?.workerId]);
      expect(rows).toEqual([{ stopped: true }]);
    } finally {
      await locker.query("ROLLBACK").catch(() => undefined);
      locker.release();
    }
  });
});
