import { useTestDatabase } from "@porter/db/testing/test-database";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { controlPlane, type QueueRow, type TenantRow } from "../testing/control-plane-factory";
import { jobInput } from "../testing/fixtures";
import { type ClaimedJob, claimBatch } from "./claim-jobs";
import { completeJobs, type Handover } from "./complete-jobs";
import { enqueueJobs } from "./enqueue-jobs";

// Issue 15: the ack of a capped queue's jobs hands their room to the queue's next jobs in the same
// statement (`porter_handover`): one round trip and one commit per round of a capped queue. A
// hand-over never adds to the queue's RUNNING count and never exceeds the cap as it stands now.
const db = useTestDatabase();
const job = jobInput;
const setup = async (queues: Array<Omit<QueueRow, "pool_id">>, tenants: TenantRow[] = [{ id: "tenant_A" }, { id: "tenant_B" }]) => {
  await db.pool.query(`TRUNCATE jobs, finished_jobs, idempotency_keys, fair_clocks, job_types, queues, pools, tenants, resource_keys CASCADE`);
  await controlPlane(db.pool, { pool: "p1", queues, tenants });
};
const claim = async (limit: number, workerId = "w1") => (await claimBatch(db.pool, { poolId: "p1", workerId, limit })).jobs;
const handover = (queueIds: string[], limit = 100, workerId = "w1"): Handover => ({ poolId: "p1", workerId, queueIds, limit });
const ack = (jobs: ClaimedJob[], over?: Handover, client: pg.Pool | pg.PoolClient = db.pool) =>
  completeJobs(
    client,
    jobs.map((c) => ({ id: c.id, leaseToken: c.leaseToken, attempt: c.attempt, result: null })),
    undefined,
    over,
  );
const running = async (queueId: string): Promise<number> =>
  (await db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM jobs WHERE queue_id = $1 AND state = 'RUNNING'`, [queueId])).rows[0]!.n;

describe("porter_handover: acked jobs of a capped queue hand their room to its next jobs", () => {
  it("claims one successor per acked job, in claim order, for the acking worker, not started", async () => {
    await setup([{ id: "q1", concurrency_cap: 2 }]);
    await enqueueJobs(
      db.pool,
      Array.from({ length: 6 }, () => job("q1.job")),
    );
    const first = await claim(10);
    expect(first).toHaveLength(2);
    const { completed, stale, handedOver } = await ack(first, handover(["q1"]));
    expect(completed.sort()).toEqual(first.map((j) => j.id).sort());
    expect(stale).toEqual([]);
    expect(handedOver).toHaveLength(2);
    expect(handedOver.every((j) => j.queueId === "q1" && j.attempt === 1 && !j.isStarted)).toBe(true);
    // The next two in enqueue order (one tenant: vft order), under one new lease token.
    const { rows } = await db.pool.query<{ id: string; lease_owner: string; started_at: Date | null }>(
      `SELECT id::text, lease_owner, started_at FROM jobs WHERE state = 'RUNNING' ORDER BY id`,
    );
    expect(rows.map((r) => r.id)).toEqual(handedOver.map((j) => j.id).sort((a, b) => Number(a) - Number(b)));
    expect(rows.every((r) => r.lease_owner === "w1" && r.started_at === null)).toBe(true);
    expect(new Set(handedOver.map((j) => j.leaseToken)).size).toBe(1);
    expect(await running("q1")).toBe(2);
    // The status stream and the flow rollups see the hand-over's starts as a claim's.
    const events = await db.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM job_stream s, unnest(s.job_ids) AS e(job_id) WHERE s.state = 'RUNNING' AND e.job_id = ANY ($1::uuid[])`,
      [handedOver.map((j) => j.jobId)],
    );
    expect(events.rows[0]!.n).toBe(2);
    const starts = await db.pool.query<{ n: number }>(`SELECT coalesce(sum(starts), 0)::int AS n FROM flow_rollups WHERE queue_id = 'q1'`);
    expect(starts.rows[0]!.n).toBe(4);
  });

  it("shares the room between the queue's tenants in the claim's order (weights)", async () => {
    await setup(
      [{ id: "q1", concurrency_cap: 4 }],
      [
        { id: "tenant_A", weight: 1 },
        { id: "tenant_B", weight: 3 },
      ],
    );
    await enqueueJobs(db.pool, [
      ...Array.from({ length: 8 }, () => job("q1.job", { tenant_id: "tenant_A" })),
      ...Array.from({ length: 8 }, () => job("q1.job", { tenant_id: "tenant_B" })),
    ]);
    const first = await claim(4);
    const handed = (await ack(first, handover(["q1"]))).handedOver;
    // Weights 1:3 over 8 starts: the same split as two claims of 4.
    const tenants = [...first, ...handed].map((j) => j.tenantId);
    expect(tenants.filter((t) => t === "tenant_B")).toHaveLength(6);
    expect(tenants.filter((t) => t === "tenant_A")).toHaveLength(2);
  });

  it("hands over only what the statement's own fenced ack freed: a stale ack frees nothing", async () => {
    await setup([{ id: "q1", concurrency_cap: 2 }]);
    await enqueueJobs(
      db.pool,
      Array.from({ length: 4 }, () => job("q1.job")),
    );
    const [a, b] = await claim(10);
    const outcome = await ack([{ ...a!, leaseToken: "999999" }, b!], handover(["q1"]));
    expect(outcome.stale).toEqual([a!.id]);
    expect(outcome.handedOver).toHaveLength(1);
    expect(await running("q1")).toBe(2);
  });

  it("never exceeds a cap lowered while jobs run: the room freed goes only below the new cap", async () => {
    await setup([{ id: "q1", concurrency_cap: 4 }]);
    await enqueueJobs(
      db.pool,
      Array.from({ length: 10 }, () => job("q1.job")),
    );
    const four = await claim(10);
    expect(four).toHaveLength(4);
    await db.pool.query(`UPDATE queues SET concurrency_cap = 2 WHERE id = 'q1'`);
    expect((await ack([four[0]!], handover(["q1"]))).handedOver).toEqual([]);
    expect((await ack([four[1]!], handover(["q1"]))).handedOver).toEqual([]);
    // Two running under a cap of two: the next ack's room is handed over (the statement's own delete counted).
    expect((await ack([four[2]!], handover(["q1"]))).handedOver).toHaveLength(1);
    expect(await running("q1")).toBe(2);
  });

  it("declines where a hand-over within the queue could change another limit, and for uncapped or paused queues", async () => {
    const handedAfterOneAck = async () => {
      await enqueueJobs(
        db.pool,
        Array.from({ length: 3 }, () => job("q1.job")),
      );
      const first = await claim(1);
      expect(first).toHaveLength(1);
      return (await ack(first, handover(["q1"]))).handedOver.length;
    };
    await setup([{ id: "q1", concurrency_cap: 2 }], [{ id: "tenant_A", max_running: 10 }, { id: "tenant_B" }]);
    expect(await handedAfterOneAck()).toBe(0);
    await setup([{ id: "q1", concurrency_cap: 2 }], [{ id: "tenant_A" }, { id: "tenant_B", start_rate_per_second: 100 }]);
    expect(await handedAfterOneAck()).toBe(0);
    await db.pool.query(`TRUNCATE jobs, finished_jobs, idempotency_keys, fair_clocks, job_types, queues, pools, tenants, resource_keys CASCADE`);
    await controlPlane(db.pool, {
      pool: "p1",
      resourceKeys: [{ id: "rk", concurrency_limit: 5 }],
      queues: [{ id: "q1", concurrency_cap: 2, resource_key_id: "rk" }],
    });
    expect(await handedAfterOneAck()).toBe(0);
    await setup([{ id: "q1" }]);
    expect(await handedAfterOneAck()).toBe(0);
    await setup([{ id: "q1", concurrency_cap: 2 }]);
    await enqueueJobs(
      db.pool,
      Array.from({ length: 3 }, () => job("q1.job")),
    );
    const first = await claim(1);
    await db.pool.query(`UPDATE queues SET paused = true WHERE id = 'q1'`);
    expect((await ack(first, handover(["q1"]))).handedOver).toEqual([]);
    // And a queue not named: its room goes back to the pool's claims.
    await setup([
      { id: "q1", concurrency_cap: 2 },
      { id: "q2", concurrency_cap: 2 },
    ]);
    await enqueueJobs(db.pool, [...Array.from({ length: 3 }, () => job("q1.job")), ...Array.from({ length: 3 }, () => job("q2.job"))]);
    const both = await claim(10);
    const handed = (await ack(both, handover(["q2"]))).handedOver;
    expect(handed.map((j) => j.queueId)).toEqual(["q2"]);
  });

  it("marks the first `start` of them started, as a claim marks jobs for free slots", async () => {
    await setup([{ id: "q1", concurrency_cap: 3 }]);
    await enqueueJobs(
      db.pool,
      Array.from({ length: 8 }, () => job("q1.job")),
    );
    const first = await claim(10);
    const handed = (await ack(first, { ...handover(["q1"]), start: 2 })).handedOver;
    expect(handed.map((j) => j.isStarted)).toEqual([true, true, false]);
    const { rows } = await db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM jobs WHERE state = 'RUNNING' AND started_at IS NOT NULL`);
    expect(rows[0]!.n).toBe(2);
  });

  it("respects its limit across queues", async () => {
    await setup([{ id: "q1", concurrency_cap: 3 }]);
    await enqueueJobs(
      db.pool,
      Array.from({ length: 8 }, () => job("q1.job")),
    );
    const first = await claim(10);
    expect((await ack(first, handover(["q1"], 1))).handedOver).toHaveLength(1);
    expect(await running("q1")).toBe(1);
  });

  it("keeps the cap exact with hand-overs and claims racing on real connections", async () => {
    const CAP = 3;
    await setup([{ id: "q1", concurrency_cap: CAP }, { id: "q2" }]);
    await enqueueJobs(db.pool, [...Array.from({ length: 400 }, () => job("q1.job")), ...Array.from({ length: 200 }, () => job("q2.job"))]);
    const workers = 4;
    const pools = Array.from({ length: workers }, () => new pg.Pool({ connectionString: db.appConnectionString, max: 2 }));
    let stop = false;
    let peak = 0;
    let handedTotal = 0;
    const sampler = (async () => {
      while (!stop) peak = Math.max(peak, await running("q1"));
    })();
    try {
      await Promise.all(
        pools.map(async (pool, w) => {
          const workerId = `w${w}`;
          let held: ClaimedJob[] = [];
          for (let round = 0; round < 5000; round++) {
            if (held.length === 0) {
              held = (await claimBatch(pool, { poolId: "p1", workerId, limit: 2 })).jobs;
              if (held.length === 0) {
                if ((await db.pool.query(`SELECT 1 FROM jobs LIMIT 1`)).rowCount === 0) return;
                continue;
              }
            }
            const done = held.splice(0, 1);
            const { handedOver } = await ack(done, handover(["q1"], 2, workerId), pool);
            handedTotal += handedOver.length;
            held.push(...handedOver);
          }
        }),
      );
    } finally {
      stop = true;
      await sampler;
      await Promise.all(pools.map((p) => p.end()));
    }
    expect(peak).toBeLessThanOrEqual(CAP);
    expect(peak).toBe(CAP);
    expect(handedTotal).toBeGreaterThan(50);
    // Every job ran exactly once: finished, none left, none twice.
    const { rows } = await db.pool.query<{ finished: number; left: number }>(
      `SELECT (SELECT count(*)::int FROM finished_jobs) AS finished, (SELECT count(*)::int FROM jobs) AS left`,
    );
    expect(rows[0]).toEqual({ finished: 600, left: 0 });
  });
});
