import { createPool } from "@porter/db/pool";
import { useTestDatabase } from "@porter/db/testing/test-database";
import type pg from "pg";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { attemptsOf, createDiagPlane, enqueue, jobRow, statesOf, waitFor } from "../testing/fixtures";
import { killWorker, spawnWorker, type WorkerProcess } from "../testing/worker-process";
import { REPEATED_SIGNAL_WINDOW_MS } from "./stop-signals";

const testDb = useTestDatabase();
let db: pg.Pool;
let pool: string;
const spawned: WorkerProcess[] = [];

const startWorker = async (args: string[]) => {
  const worker = spawnWorker({ connectionString: testDb.appConnectionString, pool, args });
  spawned.push(worker);
  const started = await worker.waitForLog((line) => line.msg === "worker started");
  return { worker, workerId: started.workerId as string };
};

const waitRunning = (ids: string[]) =>
  waitFor(`${ids.length} jobs running`, async () => {
    const states = await statesOf(db, ids);
    return ids.every((id) => states.get(id) === "RUNNING") || undefined;
  });

beforeAll(async () => {
  db = createPool(testDb.appConnectionString, { max: 4 });
  pool = await createDiagPlane(db, { queue: { lease_seconds: 30 } });
});

afterEach(async () => {
  for (const worker of spawned.splice(0)) await killWorker(worker);
  await db.query(`DELETE FROM jobs`);
});

afterAll(async () => {
  await db.end();
});

describe("graceful drain (SIGTERM)", () => {
  it("finishes what it can within the grace, hands the rest back without burning an attempt, exits 0", async () => {
    const graceMs = 1_500;
    const { worker, workerId } = await startWorker(["--concurrency", "6", "--grace-ms", String(graceMs)]);
    const short = await enqueue(
      db,
      Array.from({ length: 2 }, () => ({ type: "diag.sleep", payload: { ms: 800 } })),
    );
    const long = await enqueue(
      db,
      Array.from({ length: 4 }, () => ({ type: "diag.sleep", payload: { ms: 60_000 } })),
    );
    await waitRunning([...short, ...long]);

    const signalledAt = Date.now();
    worker.child.kill("SIGTERM");
    const exit = await worker.exited;
    expect(exit.code).toBe(0);
    expect(exit.at - signalledAt).toBeLessThan(graceMs + 4_000);

    for (const id of short) expect((await jobRow(db, id))?.state).toBe("SUCCEEDED");
    for (const id of long) {
      expect(await jobRow(db, id)).toMatchObject({ state: "READY", attempt: 0 });
      expect((await attemptsOf(db, id)).map((a) => a.outcome)).toEqual(["handed_back"]);
    }
    const { rows } = await db.query(`SELECT running, stopped_at IS NOT NULL AS stopped FROM workers WHERE id = $1`, [workerId]);
    expect(rows[0]).toEqual({ running: 0, stopped: true });
    expect(worker.logs().some((line) => line.msg === "drained; exiting")).toBe(true);
  });

  it("a second signal ends the grace at once: unfinished work is handed back and the process exits", async () => {
    const { worker } = await startWorker(["--concurrency", "4", "--grace-ms", "60000"]);
    const ids = await enqueue(
      db,
      Array.from({ length: 3 }, () => ({ type: "diag.sleep", payload: { ms: 60_000 } })),
    );
    await waitRunning(ids);

    const signalledAt = Date.now();
    worker.child.kill("SIGTERM");
    await worker.waitForLog((line) => line.msg === "draining: stopped claiming");
    // Within a second it would count as the same signal delivered twice (worker-signals.int.test.ts).
    await new Promise((resolve) => setTimeout(resolve, REPEATED_SIGNAL_WINDOW_MS + 100));
    worker.child.kill("SIGTERM");
    const exit = await worker.exited;
    expect(exit.code).toBe(0);
    expect(exit.at - signalledAt).toBeLessThan(REPEATED_SIGNAL_WINDOW_MS + 5_000);
    for (const id of ids) expect(await jobRow(db, id)).toMatchObject({ state: "READY", attempt: 0 });
  });
});
