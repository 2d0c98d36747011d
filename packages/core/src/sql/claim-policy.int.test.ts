import { useTestDatabase } from "@porter/db/testing/test-database";
import { beforeEach, describe, expect, it } from "vitest";
import { claimTimes, claimTimesOf } from "../testing/claim-times";
import { controlPlane, type QueueRow } from "../testing/control-plane-factory";
import { jobInput } from "../testing/fixtures";
import { CLAIM_ORDER_AT, claimBatch, claimJobs } from "./claim-jobs";
import { enqueueJobs } from "./enqueue-jobs";

const db = useTestDatabase();
const job = jobInput;
const setup = async (queues: Array<Omit<QueueRow, "pool_id">>, poolCap: number | null = null) => {
  await db.pool.query(`TRUNCATE jobs, finished_jobs, idempotency_keys, job_types, queues, pools, tenants CASCADE`);
  await controlPlane(db.pool, { pool: { id: "p1", concurrency_cap: poolCap }, queues });
};

describe("claimJobs honours policy", () => {
  beforeEach(() => setup([{ id: "q1" }, { id: "q2" }]));

  it("claims by priority, then age, across the pool's queues", async () => {
    const [low] = await enqueueJobs(db.pool, [job("q1.job", { priority: 10 })]);
    const [high] = await enqueueJobs(db.pool, [job("q2.job", { priority: 90 })]);
    const [mid1] = await enqueueJobs(db.pool, [job("q1.job", { priority: 50 })]);
    const [mid2] = await enqueueJobs(db.pool, [job("q2.job", { priority: 50 })]);
    const claimed = await claimJobs(db.pool, { poolId: "p1", workerId: "w", limit: 4 });
    expect(claimed.map((c) => c.jobId)).toEqual([high!.job_id, mid1!.job_id, mid2!.job_id, low!.job_id]);
    const times = await claimTimes(db.pool, claimed);
    expect(claimed.every((c) => c.attempt === 1 && times.get(c.id)!.leaseUntil > new Date())).toBe(true);
  });

  it("returns each job's place in claim order, and the worker's rows follow it whatever order they arrive in", async () => {
    // Enqueued lowest priority first, so the heap's order is the reverse of the claim's.
    const enqueued = [];
    for (const priority of [10, 20, 30, 40, 50]) enqueued.push((await enqueueJobs(db.pool, [job("q1.job", { priority })]))[0]!);
    const expected = [...enqueued].reverse().map((r) => r.job_id);
    const client = await db.pool.connect();
    try {
      await client.query("BEGIN");
      const { rows } = await client.query<{ job_id: string; claim_order: number }>(
        `SELECT job_id::text, claim_order FROM porter_claim('p1', 'w', 10, NULL, 10) WHERE bound IS NULL`,
      );
      expect(rows.map((r) => r.claim_order).sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5]);
      expect([...rows].sort((a, b) => a.claim_order - b.claim_order).map((r) => r.job_id)).toEqual(expected);
      await client.query("ROLLBACK");
      // The same claim through claimBatch, on a connection whose rows arrive in the order 5, 3, 1, 4,
      // 2 of their places (neither the claim's order nor its reverse, whatever the plan returned).
      const query = client.query.bind(client) as (...a: unknown[]) => Promise<{ rows: unknown[][] }>;
      (client as unknown as { query: unknown }).query = async (...a: unknown[]) => {
        const result = await query(...a);
        result.rows.sort((x, y) => (((x[CLAIM_ORDER_AT] as number) * 7) % 5) - (((y[CLAIM_ORDER_AT] as number) * 7) % 5));
        return result;
      };
      const { jobs } = await claimBatch(client, { poolId: "p1", workerId: "w", limit: 10 });
      expect(jobs.map((c) => c.jobId)).toEqual(expected);
    } finally {
      client.release(true);
    }
  });

  it("skips paused queues and work not yet due", async () => {
    await db.pool.query(`UPDATE queues SET paused = true WHERE id = 'q2'`);
    await enqueueJobs(db.pool, [job("q2.job"), job("q1.job", { not_before: new Date(Date.now() + 60_000).toISOString() })]);
    const [due] = await enqueueJobs(db.pool, [job("q1.job")]);
    const claimed = await claimJobs(db.pool, { poolId: "p1", workerId: "w", limit: 10 });
    expect(claimed.map((c) => c.jobId)).toEqual([due!.job_id]);
  });

  it("does not start work past its deadline", async () => {
    const [r] = await enqueueJobs(db.pool, [job("q1.job", { deadline_at: new Date(Date.now() + 60_000).toISOString() })]);
    const claimed = await claimJobs(db.pool, { poolId: "p1", workerId: "w", limit: 10, now: new Date(Date.now() + 120_000) });
    expect(claimed).toEqual([]);
    const later = await claimJobs(db.pool, { poolId: "p1", workerId: "w", limit: 10 });
    expect(later.map((c) => c.jobId)).toEqual([r!.job_id]);
  });

  it("never lets a lease outlive the deadline", async () => {
    const deadline = new Date(Date.now() + 5_000);
    await enqueueJobs(db.pool, [job("q1.job", { deadline_at: deadline.toISOString() })]);
    const [c] = await claimJobs(db.pool, { poolId: "p1", workerId: "w", limit: 1 });
    expect((await claimTimesOf(db.pool, c!)).leaseUntil.getTime()).toBe(deadline.getTime());
  });

  it("gives every claim batch a new fencing token", async () => {
    await enqueueJobs(db.pool, [job("q1.job"), job("q1.job")]);
    const [a] = await claimJobs(db.pool, { poolId: "p1", workerId: "w", limit: 1 });
    const [b] = await claimJobs(db.pool, { poolId: "p1", workerId: "w", limit: 1 });
    expect(a!.leaseToken).not.toBe(b!.leaseToken);
  });
});

describe("claimJobs holds caps", () => {
  it("never exceeds a queue's concurrency cap, across claims", async () => {
    await setup([{ id: "q1", concurrency_cap: 3 }, { id: "q2" }]);
    await enqueueJobs(
      db.pool,
      Array.from({ length: 10 }, () => job("q1.job")),
    );
    await enqueueJobs(
      db.pool,
      Array.from({ length: 2 }, () => job("q2.job")),
    );
    const first = await claimJobs(db.pool, { poolId: "p1", workerId: "w", limit: 10 });
    expect(first.filter((c) => c.queueId === "q1")).toHaveLength(3);
    expect(first.filter((c) => c.queueId === "q2")).toHaveLength(2);
    expect(await claimJobs(db.pool, { poolId: "p1", workerId: "w", limit: 10 })).toEqual([]);
  });

  it("never exceeds a pool's cap", async () => {
    await setup([{ id: "q1" }, { id: "q2" }], 4);
    await enqueueJobs(
      db.pool,
      Array.from({ length: 10 }, (_, i) => job(i % 2 ? "q1.job" : "q2.job")),
    );
    expect(await claimJobs(db.pool, { poolId: "p1", workerId: "w", limit: 10 })).toHaveLength(4);
    expect(await claimJobs(db.pool, { poolId: "p1", workerId: "w", limit: 10 })).toHaveLength(0);
  });

  it("holds the queue cap with many concurrent claimers on separate connections", async () => {
    await setup([{ id: "q1", concurrency_cap: 5 }]);
    await enqueueJobs(
      db.pool,
      Array.from({ length: 200 }, () => job("q1.job")),
    );
    const claims = await Promise.all(Array.from({ length: 5 }, (_, i) => claimJobs(db.pool, { poolId: "p1", workerId: `w${i}`, limit: 5 })));
    expect(claims.flat()).toHaveLength(5);
    const { rows } = await db.pool.query(`SELECT count(*)::int AS n FROM jobs WHERE state = 'RUNNING'`);
    expect(rows[0].n).toBe(5);
  });
});
