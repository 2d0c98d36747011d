// Derived signals on a constructed state: a backlog enqueued at known times, flow rows written as
// the job paths write them, live workers, a resource key that gets throttled.
import { useTestDatabase } from "@porter/db/testing/test-database";
import { beforeAll, describe, expect, it } from "vitest";
import { enqueueJobs } from "../sql/enqueue-jobs";
import { controlPlane } from "../testing/control-plane-factory";
import { killJobs } from "../testing/dead-jobs";
import { readSignals } from "./signals";

const db = useTestDatabase();
const NOW = new Date(Math.floor(Date.now() / 60_000) * 60_000 + 30_000);
const ago = (s: number) => new Date(NOW.getTime() - s * 1000);

/** Flow as the writers add it: minute rows on some shard. */
const flow = async (queueId: string, jobType: string, row: { arrivals?: number; succeeded: number; runMs: number }) => {
  await db.pool.query(
    `INSERT INTO flow_rollups (grain, at, queue_id, job_type, tenant_id, shard, arrivals, succeeded, runs, run_ms_sum)
     VALUES (1, date_trunc('minute', $1::timestamptz), $2, $3, 'tenant_A', 7, $4, $5::bigint, $5::bigint, $5::bigint * $6::float8)`,
    [ago(120), queueId, jobType, row.arrivals ?? 0, row.succeeded, row.runMs],
  );
};

beforeAll(async () => {
  await controlPlane(db.pool, {
    pool: { id: "p1", worker_concurrency: 10 },
    resourceKeys: [{ id: "provider" }],
    queues: [{ id: "q1", resource_key_id: "provider", target_wait_s: 60 }, { id: "q2" }, { id: "q3" }],
  });
  await killJobs(db.pool, 3, { jobType: "q3.job" });
  await db.pool.query(
    `INSERT INTO workers (id, pool_id, host, pid, version, concurrency, heartbeat_at)
     VALUES ('w1', 'p1', 'h', 1, 't', 10, $1), ('w2', 'p1', 'h', 2, 't', 10, $1), ('gone', 'p1', 'h', 3, 't', 10, $2)`,
    [NOW, ago(3_600)],
  );
  const jobs = (type: string, n: number) =>
    Array.from({ length: n }, (_, i) => ({ job_type: type, tenant_id: "tenant_A", payload: { i }, idempotency_key: `${type}-${i}` }));
  await enqueueJobs(db.pool, jobs("q1.job", 100), { now: ago(300) });
  await enqueueJobs(db.pool, jobs("q2.job", 10), { now: ago(60) });
  // q1: 600 more arrivals, 300 done at 20 s each; q2: 440 more arrivals, 900 done at 1 s each.
  await flow("q1", "q1.job", { arrivals: 600, succeeded: 300, runMs: 20_000 });
  await flow("q2", "q2.job", { arrivals: 440, succeeded: 900, runMs: 1_000 });
});

describe("signals", () => {
  it("oldest age, backlog seconds, growth and risk, drain, DLQ, per tenant and job type", async () => {
    const s = await readSignals(db.pool, { now: NOW, windowS: 900 });
    const [q1, q2, q3] = s.queues;
    expect(q1).toMatchObject({
      queueId: "q1",
      ready: 100,
      isReadyLowerBound: false,
      arrivals: 700,
      completions: 300,
      meanRunS: 20,
      effectiveConcurrency: 20, // two live workers × 10; the stale one does not count
      backlogS: 100, // 100 × 20 s ÷ 20
      isGrowing: true,
      drainS: null,
      targetWaitS: 60,
      isAtRisk: true,
    });
    expect(q1!.oldestClaimableAgeS).toBeCloseTo(300, 0);
    expect(q1!.projectedWaitS).toBeCloseTo(300, 0); // growing: at least the oldest age
    expect(q1!.arrivalToCompletion).toBeCloseTo(700 / 300, 5);
    expect(q2).toMatchObject({ ready: 10, meanRunS: 1, backlogS: 0.5, isGrowing: false, isAtRisk: false, targetWaitS: null });
    expect(q2!.drainS).toBeCloseTo(10 / (900 / 900 - 450 / 900), 5); // 20 s
    expect(q2!.oldestClaimableAgeS).toBeCloseTo(60, 0);
    expect(q3).toMatchObject({ ready: 0, backlogS: 0, drainS: 0, dead: 3, dlq: { count: 3, unowned: 3 } });
    expect(q3!.dlq.oldestAgeS).not.toBeNull();
    expect(q1!.byTenant.map((t) => [t.tenantId, t.arrivals])).toEqual([["tenant_A", 700]]);
    expect(q1!.byJobType.map((t) => [t.jobType, t.completions])).toEqual([["q1.job", 300]]);
    expect(s.pools).toEqual([{ poolId: "p1", liveWorkers: 2, workerConcurrency: 10, desiredWorkers: expect.any(Number), throttledKeys: [] }]);
  });

  it("recommends fewer workers when the pool's resource key is throttled by 429s", async () => {
    const before = (await readSignals(db.pool, { now: NOW, windowS: 900 })).pools[0]!;
    // q1 alone wants 700/900 × 20 + 100 × 20 / 60 ≈ 49 concurrent: 5 workers of 10.
    expect(before.desiredWorkers).toBe(5);
    await db.pool.query(`UPDATE resource_keys SET current_limit = 5, throttled_until = $1 WHERE id = 'provider'`, [ago(-60)]);
    const after = await readSignals(db.pool, { now: NOW, windowS: 900 });
    expect(after.pools[0]).toMatchObject({ throttledKeys: ["provider"], desiredWorkers: 1 });
    expect(after.queues[0]).toMatchObject({ effectiveConcurrency: 5, backlogS: 400 });
  });

  it("narrows the flow to one queue and one tenant", async () => {
    const s = await readSignals(db.pool, { now: NOW, windowS: 900, queueId: "q2", tenantId: "tenant_B" });
    expect(s.queues.map((q) => [q.queueId, q.arrivals])).toEqual([["q2", 0]]);
  });
});
