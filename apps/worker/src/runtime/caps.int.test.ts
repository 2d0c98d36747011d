import { setTimeout as sleep } from "node:timers/promises";
import { redriveJobs, rescueExpiredLeases, runMaintenance } from "@porter/core";
import { controlPlane } from "@porter/core/testing/control-plane-factory";
import { createPool } from "@porter/db/pool";
import { useTestDatabase } from "@porter/db/testing/test-database";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type EnqueueSpec, enqueue, waitFor, waitForStates } from "../testing/fixtures";
import { killWorker, spawnWorker, type WorkerProcess } from "../testing/worker-process";

// Running quotas and caps (issue 4), held across real worker processes: three processes with 20
// slots each serve two pools; a sampler reads the RUNNING counts every few ms while ~400 jobs
// drain, through a SIGKILLed worker's lease rescue and a redrive. No sample may exceed any cap —
// tenant max_running, queue concurrency_cap, pool concurrency_cap, and a resource key shared by
// queues of both pools — and every cap must be reached at some sample (the test is not vacuous).
const testDb = useTestDatabase();
let db: pg.Pool;
const spawned: WorkerProcess[] = [];
const CAPS: Record<string, number> = { "tenant:t1": 6, "queue:sleepy": 5, "pool:lane-a": 12, "pool:lane-b": 10, "rk:llm": 7 };

beforeAll(async () => {
  db = createPool(testDb.appConnectionString, { max: 8 });
  // lane-a: `sleepy` (diag.sleep, capped, resource key llm) and `mail` (email.send).
  // lane-b: `effects` (diag.effect, resource key llm) and `hooks` (webhook.deliver).
  // Short leases: a killed worker's jobs are rescued within seconds.
  await controlPlane(db, {
    pool: "lane-a",
    queues: [
      { id: "sleepy", lease_seconds: 3, concurrency_cap: CAPS["queue:sleepy"] },
      { id: "mail", lease_seconds: 3 },
    ],
    jobTypes: [
      { id: "diag.sleep", queue: "sleepy" },
      { id: "email.send", queue: "mail" },
    ],
    tenants: ["t1", "t2", "t3"],
  });
  await controlPlane(db, {
    pool: "lane-b",
    queues: [
      { id: "effects", lease_seconds: 3 },
      { id: "hooks", lease_seconds: 3 },
    ],
    jobTypes: [
      { id: "diag.effect", queue: "effects" },
      { id: "webhook.deliver", queue: "hooks" },
    ],
    tenants: [],
  });
  await db.query(`INSERT INTO resource_keys (id, concurrency_limit) VALUES ('llm', $1)`, [CAPS["rk:llm"]]);
  await db.query(`UPDATE queues SET resource_key_id = 'llm' WHERE id IN ('sleepy', 'effects')`);
  await db.query(`UPDATE pools SET concurrency_cap = CASE id WHEN 'lane-a' THEN $1::int ELSE $2::int END`, [CAPS["pool:lane-a"], CAPS["pool:lane-b"]]);
  await db.query(`UPDATE tenants SET max_running = $1 WHERE id = 't1'`, [CAPS["tenant:t1"]]);
});

afterAll(async () => {
  for (const worker of spawned.splice(0)) await killWorker(worker);
  await db.end();
});

/** Reads RUNNING counts per tenant, queue, pool and resource key — one statement, one snapshot — until stopped. */
const startSampler = async () => {
  const client = new pg.Client({ connectionString: testDb.appConnectionString });
  await client.connect();
  const samples: Array<{ at: number; counts: Map<string, number> }> = [];
  let isRunning = true;
  const loop = (async () => {
    while (isRunning) {
      const { rows } = await client.query<{ k: string; n: number }>(
        `WITH r AS (SELECT j.tenant_id, j.queue_id, q.pool_id, q.resource_key_id FROM jobs j JOIN queues q ON q.id = j.queue_id
                     WHERE j.state = 'RUNNING')
         SELECT 'tenant:' || tenant_id AS k, count(*)::int AS n FROM r GROUP BY 1
         UNION ALL SELECT 'queue:' || queue_id, count(*)::int FROM r GROUP BY 1
         UNION ALL SELECT 'pool:' || pool_id, count(*)::int FROM r GROUP BY 1
         UNION ALL SELECT 'rk:' || resource_key_id, count(*)::int FROM r WHERE resource_key_id IS NOT NULL GROUP BY 1`,
      );
      samples.push({ at: Date.now(), counts: new Map(rows.map((r) => [r.k, r.n])) });
      await sleep(2);
    }
  })();
  return {
    samples,
    stop: async () => {
      isRunning = false;
      await loop;
      await client.end();
    },
  };
};

const startWorker = async (pool: string) => {
  const worker = spawnWorker({ connectionString: testDb.appConnectionString, pool, args: ["--concurrency", "20", "--no-maintenance"] });
  spawned.push(worker);
  const started = await worker.waitForLog((line) => line.msg === "worker started", 40_000);
  return { worker, id: started.workerId as string };
};

const between = (lo: number, hi: number) => lo + Math.floor(Math.random() * (hi - lo + 1));

describe("caps across worker processes", () => {
  it("never exceed any cap at any sample, through a lease rescue and a redrive, and are reached", async () => {
    // DEAD jobs to redrive mid-run: single-attempt sleeps whose (ghost) worker lost its lease.
    const toRedrive = await enqueue(
      db,
      Array.from({ length: 30 }, () => ({ type: "diag.sleep", payload: { ms: between(50, 200) }, tenant: "t2", maxAttempts: 1 })),
    );
    await db.query(
      `UPDATE jobs SET state = 'RUNNING', attempt = 1, claimed_at = now(), started_at = now(), lease_owner = 'ghost',
                       lease_token = nextval('lease_token_seq'), lease_until = now() - interval '1 second'
        WHERE job_id = ANY($1::uuid[])`,
      [toRedrive],
    );
    expect((await rescueExpiredLeases(db)).dead).toBe(30);

    const [a1, a2, b1] = await Promise.all([startWorker("lane-a"), startWorker("lane-a"), startWorker("lane-b")]);
    const sampler = await startSampler();
    let isMaintaining = true;
    const maintenance = (async () => {
      while (isMaintaining) {
        await runMaintenance(db);
        await sleep(250);
      }
    })();

    // 400 jobs of 20–200 ms: the resource key's queues hold t2's and t3's sleeps, the others mostly
    // t1's mail and webhooks — so each cap binds for a while rather than hiding behind another.
    const specs: EnqueueSpec[] = Array.from({ length: 400 }, (_, i) => {
      const ms = between(50, 200);
      const other = i % 8 < 4 ? "t2" : "t3";
      return [
        { type: "diag.sleep", payload: { ms }, tenant: other },
        { type: "diag.effect", payload: { key: `caps-${i}`, ms }, tenant: other },
        { type: "email.send", payload: { message_ref: `s3://mail/${i}` }, tenant: i % 12 < 8 ? "t1" : "t2" },
        { type: "webhook.deliver", payload: { event_ref: `evt-${i}` }, tenant: i % 12 < 8 ? "t1" : "t3" },
      ][i % 4]!;
    });
    const ids = await enqueue(db, specs);

    // Mid-run: SIGKILL a lane-a worker holding jobs (left RUNNING until maintenance rescues them),
    // and redrive the DEAD jobs into the capped queue. Either lane-a worker: under the pool's cap
    // the one whose results free room claims it again first (the claim's bounds), so which of the
    // two holds jobs at a given moment is up to the race.
    const { victim, held } = await waitFor(
      "a lane-a worker to hold running jobs",
      async () => {
        for (const w of [a2, a1]) {
          const { rows } = await db.query(`SELECT job_id::text FROM jobs WHERE state = 'RUNNING' AND lease_owner = $1`, [w.id]);
          if (rows.length >= 3) return { victim: w, held: rows.map((r) => r.job_id as string) };
        }
        return undefined;
      },
      { intervalMs: 5 },
    );
    victim.worker.child.kill("SIGKILL");
    await victim.worker.exited;
    const killedAt = Date.now();
    const { redriven } = await redriveJobs(db, { jobIds: toRedrive, actor: "test:caps" });
    expect(redriven).toHaveLength(30);

    await waitForStates(db, [...ids, ...toRedrive], ["SUCCEEDED"], 45_000);
    isMaintaining = false;
    await maintenance;
    await sampler.stop();
    for (const w of [a1, a2, b1].filter((w) => w !== victim)) {
      w.worker.child.kill("SIGTERM");
      expect((await w.worker.exited).code).toBe(0);
    }

    // The killed worker's jobs were rescued and then ran to the end elsewhere — but for any whose
    // result it wrote between the read of `held` and the kill (a few ms in which a finished job's
    // result may commit): each held job has one attempt of the victim's, ended by the rescue or by
    // the victim's own result, and the rescue ended some. A rescued job the victim had claimed but
    // not yet started (still in its prefetch buffer, its start mark unsent) is `not_started`.
    // A successful attempt has no `job_attempts` row: it is the finished row's own (`last_worker`).
    const { rows: endings } = await db.query<{ outcome: string; n: number }>(
      `SELECT outcome, count(*)::int AS n FROM (
         SELECT outcome::text FROM job_attempts WHERE worker_id = $1 AND job_id = ANY($2::uuid[])
         UNION ALL
         SELECT 'succeeded' FROM finished_jobs WHERE last_worker = $1 AND state = 'SUCCEEDED' AND job_id = ANY($2::uuid[])
       ) e GROUP BY 1`,
      [victim.id, held],
    );
    const ended = Object.fromEntries(endings.map((r) => [r.outcome, r.n]));
    const rescued = (ended.lease_expired ?? 0) + (ended.not_started ?? 0);
    expect(rescued, JSON.stringify(ended)).toBeGreaterThan(0);
    expect(rescued + (ended.succeeded ?? 0) + (ended.failed ?? 0), JSON.stringify(ended)).toBe(held.length);
    expect(endings.reduce((sum, r) => sum + r.n, 0)).toBe(held.length);
    const { rows: redrivenRows } = await db.query(`SELECT count(*)::int AS n FROM finished_jobs WHERE job_id = ANY($1::uuid[]) AND redrive_count = 1`, [
      toRedrive,
    ]);
    expect(redrivenRows[0].n).toBe(30);

    const max = new Map<string, number>();
    for (const s of sampler.samples) for (const [k, n] of s.counts) max.set(k, Math.max(max.get(k) ?? 0, n));
    const afterKill = sampler.samples.filter((s) => s.at >= killedAt);
    const report = Object.keys(CAPS)
      .map((k) => `${k} max ${max.get(k) ?? 0}/${CAPS[k]}`)
      .join(", ");
    const mean = (k: string) => sampler.samples.reduce((a, s) => a + (s.counts.get(k) ?? 0), 0) / sampler.samples.length;
    console.info(
      `[caps] utilization: ${Object.keys(CAPS)
        .map((k) => `${k} mean ${mean(k).toFixed(2)}`)
        .join(", ")}; run ${((sampler.samples.at(-1)!.at - sampler.samples[0]!.at) / 1000).toFixed(1)} s`,
    );
    console.info(
      `[caps] ${sampler.samples.length} samples (${afterKill.length} after the kill): ${report}; `
        + `${held.length} jobs rescued from the killed worker, 30 redriven`,
    );
    for (const [k, cap] of Object.entries(CAPS)) {
      const over = sampler.samples.find((s) => (s.counts.get(k) ?? 0) > cap);
      expect(over && `${k}: ${over.counts.get(k)} running at ${new Date(over.at).toISOString()}`, `cap ${k}`).toBeUndefined();
      expect(max.get(k), `cap ${k} reached`).toBe(cap);
    }
    expect(afterKill.length).toBeGreaterThan(50); // the rescue and the redrive happened under the sampler
  });
});
