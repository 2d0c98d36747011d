import { setTimeout as sleep } from "node:timers/promises";
import { runMaintenance } from "@porter/core";
import { controlPlane } from "@porter/core/testing/control-plane-factory";
import { createPool } from "@porter/db/pool";
import { useTestDatabase } from "@porter/db/testing/test-database";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type EnqueueSpec, enqueue, waitFor, waitForStates } from "../testing/fixtures";
import { killWorker, spawnWorker, type WorkerProcess } from "../testing/worker-process";

// Issue 15: the hand-over (docs/scheduling.md) across real worker processes, through crashes. A
// pool whose only limits are queue caps — the demo's shape, where acks hand a capped queue's room
// to its next jobs without the pool's lock — served by three processes on a PostgreSQL server of
// its own; a sampler reads the RUNNING counts every few ms while the jobs drain, through a
// SIGKILLed worker's lease rescue and a `pg_ctl restart -m immediate` of the server. No sample may
// exceed a cap, each cap is reached, hand-overs carried many of the capped queues' starts, and
// every job succeeded, its effect applied exactly once.
const testDb = useTestDatabase({ isOwnServer: true });
let db: pg.Pool;
const spawned: WorkerProcess[] = [];
const CAPS: Record<string, number> = { bulk: 3, reports: 2 };

beforeAll(async () => {
  db = createPool(testDb.appConnectionString, { max: 8 });
  await controlPlane(db, {
    pool: "lane",
    queues: [
      { id: "bulk", lease_seconds: 3, concurrency_cap: CAPS.bulk },
      { id: "reports", lease_seconds: 3, concurrency_cap: CAPS.reports },
      { id: "free", lease_seconds: 3 },
    ],
    jobTypes: [
      { id: "diag.sleep", queue: "bulk" },
      { id: "diag.effect", queue: "reports" },
      { id: "email.send", queue: "free" },
    ],
    tenants: [
      { id: "t1", weight: 1 },
      { id: "t2", weight: 2 },
    ],
  });
});

afterAll(async () => {
  for (const worker of spawned.splice(0)) await killWorker(worker);
  await db.end();
});

const startWorker = async () => {
  const worker = spawnWorker({
    connectionString: testDb.appConnectionString,
    pool: "lane",
    args: ["--concurrency", "8", "--no-maintenance"],
    env: { LOG_LEVEL: "debug" },
  });
  spawned.push(worker);
  const started = await worker.waitForLog((line) => line.msg === "worker started", 40_000);
  return { worker, id: started.workerId as string };
};

const between = (lo: number, hi: number) => lo + Math.floor(Math.random() * (hi - lo + 1));

describe("the hand-over across worker processes", () => {
  it("keeps queue caps exact at every sample, through a SIGKILLed worker's rescue and an immediate restart of PostgreSQL, and carries the capped queues' rounds", async () => {
    const workers = await Promise.all([startWorker(), startWorker(), startWorker()]);
    const sampler = new pg.Pool({ connectionString: testDb.appConnectionString, max: 1 });
    sampler.on("error", () => undefined);
    const max = new Map<string, number>();
    let isSampling = true;
    let samples = 0;
    const sampling = (async () => {
      while (isSampling) {
        // The restart cuts this connection: sample through a pool that reconnects.
        const rows = await sampler
          .query<{ queue_id: string; n: number }>(`SELECT queue_id, count(*)::int AS n FROM jobs WHERE state = 'RUNNING' GROUP BY 1`)
          .then((r) => r.rows)
          .catch(() => []);
        samples += 1;
        for (const r of rows) max.set(r.queue_id, Math.max(max.get(r.queue_id) ?? 0, r.n));
        await sleep(2);
      }
    })();
    let isMaintaining = true;
    const maintenance = (async () => {
      while (isMaintaining) {
        await runMaintenance(db).catch(() => undefined); // through the restart
        await sleep(250);
      }
    })();

    const specs: EnqueueSpec[] = Array.from({ length: 240 }, (_, i) => {
      const tenant = i % 3 === 0 ? "t1" : "t2";
      return [
        { type: "diag.sleep", payload: { ms: between(10, 40) }, tenant },
        { type: "diag.effect", payload: { key: `handover-${i}`, ms: between(10, 40) }, tenant },
        { type: "email.send", payload: { message_ref: `s3://mail/${i}` }, tenant },
      ][i % 3]!;
    });
    const ids = await enqueue(db, specs);

    // Mid-run: SIGKILL a worker holding jobs of a capped queue (rescued once its lease expires).
    const victim = await waitFor(
      "a worker to hold running jobs of a capped queue",
      async () => {
        for (const w of workers) {
          const { rows } = await db.query(`SELECT 1 FROM jobs WHERE state = 'RUNNING' AND lease_owner = $1 AND queue_id IN ('bulk', 'reports')`, [w.id]);
          if (rows.length >= 2) return w;
        }
        return undefined;
      },
      { intervalMs: 5 },
    );
    victim.worker.child.kill("SIGKILL");
    await victim.worker.exited;
    // Then the server, mid-run: what was not flushed to WAL is gone, and every worker's sessions die.
    await waitFor("more capped jobs to run after the kill", async () => {
      const { rows } = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM finished_jobs WHERE queue_id IN ('bulk', 'reports')`);
      return rows[0]!.n >= 40 ? true : undefined;
    });
    await testDb.restartImmediate();

    await waitForStates(db, ids, ["SUCCEEDED"], 60_000);
    isMaintaining = false;
    await maintenance;
    isSampling = false;
    await sampling;
    await sampler.end();
    expect(samples).toBeGreaterThan(100);
    const survivors = workers.filter((w) => w !== victim);
    for (const w of survivors) {
      w.worker.child.kill("SIGTERM");
      expect((await w.worker.exited).code).toBe(0);
    }

    expect(max.get("bulk")).toBe(CAPS.bulk);
    expect(max.get("reports")).toBe(CAPS.reports);
    // Each job once: 240 finished rows, each effect applied once (a claim or hand-over the restart
    // rolled back is claimed again; one that committed was flushed before its rows came back).
    const { rows } = await db.query<{ finished: number; effects: number; twice: number }>(
      `SELECT (SELECT count(*)::int FROM finished_jobs WHERE state = 'SUCCEEDED') AS finished,
              (SELECT count(*)::int FROM diag_effects WHERE key LIKE 'handover-%') AS effects,
              (SELECT count(*)::int FROM diag_effects WHERE key LIKE 'handover-%' AND applied > 1) AS twice`,
    );
    expect(rows[0]).toEqual({ finished: 240, effects: 80, twice: 0 });
    // Many of the capped queues' 160 jobs were started by hand-overs, not claims.
    const handed = survivors.flatMap((w) => w.worker.logs()).filter((l) => l.msg === "handed over");
    expect(handed.reduce((sum, l) => sum + Number(l.n), 0)).toBeGreaterThan(60);
  }, 120_000);
});
