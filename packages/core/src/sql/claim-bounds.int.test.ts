import { setTimeout as sleep } from "node:timers/promises";
import { useTestDatabase } from "@porter/db/testing/test-database";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { controlPlane, type QueueRow } from "../testing/control-plane-factory";
import { jobInput } from "../testing/fixtures";
import { claimBatch } from "./claim-jobs";
import { completeJobs } from "./complete-jobs";
import { enqueueJobs } from "./enqueue-jobs";

// Issue 15: the claim names the limits that cut it short with claimable work left behind (its
// bounds), so a worker knows which finished jobs free room worth a claim; and a pool whose only
// limits are queue caps claims its uncapped queues without the pool's lock while no capped queue
// has work.
const db = useTestDatabase();
const job = jobInput;
const setup = async (queues: Array<Omit<QueueRow, "pool_id">>, poolCap: number | null = null) => {
  await db.pool.query(`TRUNCATE jobs, finished_jobs, idempotency_keys, fair_clocks, job_types, queues, pools, tenants CASCADE`);
  await controlPlane(db.pool, { pool: { id: "p1", concurrency_cap: poolCap }, queues, tenants: ["tenant_A", "tenant_B"] });
};
const claim = (limit: number) => claimBatch(db.pool, { poolId: "p1", workerId: "w", limit });
const ack = (jobs: Awaited<ReturnType<typeof claim>>["jobs"]) =>
  completeJobs(
    db.pool,
    jobs.map((c) => ({ id: c.id, leaseToken: c.leaseToken, attempt: c.attempt, result: null })),
  );

describe("the claim's bounds", () => {
  it("names a queue cap while it leaves work behind, also when it cuts the claim to zero rows", async () => {
    await setup([{ id: "q1", concurrency_cap: 2 }, { id: "q2" }]);
    await enqueueJobs(db.pool, [...Array.from({ length: 5 }, () => job("q1.job")), job("q2.job")]);
    const first = await claim(10);
    expect(first.jobs.map((j) => j.queueId).sort()).toEqual(["q1", "q1", "q2"]);
    expect(first.bounds).toEqual(["queue:q1"]);
    const none = await claim(10);
    expect(none.jobs).toEqual([]);
    expect(none.bounds).toEqual(["queue:q1"]);
    await ack(first.jobs);
    const second = await claim(10);
    expect(second.jobs).toHaveLength(2);
    expect(second.bounds).toEqual(["queue:q1"]);
    await ack(second.jobs);
    // One job left and room for two: the cap no longer holds anything back.
    const last = await claim(10);
    expect(last.jobs).toHaveLength(1);
    expect(last.bounds).toEqual([]);
  });

  it("names nothing when the cap's room is used up but no work is left behind", async () => {
    await setup([{ id: "q1", concurrency_cap: 2 }]);
    await enqueueJobs(db.pool, [job("q1.job"), job("q1.job")]);
    const all = await claim(10);
    expect(all.jobs).toHaveLength(2);
    expect(all.bounds).toEqual([]);
  });

  it("names nothing on the fast path (no limit applies to the pool)", async () => {
    await setup([{ id: "q1" }]);
    await enqueueJobs(db.pool, [job("q1.job"), job("q1.job"), job("q1.job")]);
    expect(await claim(2)).toMatchObject({ bounds: [] });
  });

  it("names the pool cap and a tenant quota", async () => {
    await setup([{ id: "q1" }, { id: "q2" }], 3);
    await db.pool.query(`UPDATE tenants SET max_running = 1 WHERE id = 'tenant_B'`);
    await enqueueJobs(db.pool, [
      ...Array.from({ length: 4 }, () => job("q1.job")),
      ...Array.from({ length: 3 }, () => job("q2.job", { tenant_id: "tenant_B" })),
    ]);
    const first = await claim(10);
    expect(first.jobs).toHaveLength(3);
    expect(first.jobs.filter((j) => j.tenantId === "tenant_B")).toHaveLength(1);
    expect([...first.bounds].sort()).toEqual(["pool:p1", "tenant:tenant_B"]);
  });

  it("claims uncapped queues without the pool's lock while no capped queue has work; while another claimer holds the lock it leaves the capped queue and does not wait", async () => {
    await setup([{ id: "q1", concurrency_cap: 2 }, { id: "q2" }]);
    await enqueueJobs(db.pool, [job("q2.job"), job("q2.job")]);
    const holder = new pg.Client({ connectionString: db.connectionString });
    await holder.connect();
    try {
      await holder.query(`BEGIN`);
      await holder.query(`SELECT pg_advisory_xact_lock(hashtext('porter.claim:p1'))`);
      const unlocked = await Promise.race([claim(1), sleep(3_000).then(() => "blocked" as const)]);
      expect(unlocked).not.toBe("blocked");
      expect((unlocked as Awaited<ReturnType<typeof claim>>).jobs.map((j) => j.queueId)).toEqual(["q2"]);
      // Work in the capped queue while another claimer holds the lock: its room can only be counted
      // under the lock, so this claim takes the uncapped work at once and leaves the capped job.
      await enqueueJobs(db.pool, [job("q1.job")]);
      const busy = await Promise.race([claim(10), sleep(3_000).then(() => "blocked" as const)]);
      expect(busy).not.toBe("blocked");
      expect((busy as Awaited<ReturnType<typeof claim>>).jobs.map((j) => j.queueId)).toEqual(["q2"]);
      // The lock released: the next claim takes it and the capped job.
      await holder.query(`COMMIT`);
      expect((await claim(10)).jobs.map((j) => j.queueId)).toEqual(["q1"]);
    } finally {
      await holder.end();
    }
  });

  it("says 'more' when the tenants' shares, not the work, cut the claim short; not when the work ran out", async () => {
    await setup([{ id: "q1" }]);
    await db.pool.query(`INSERT INTO tenants (id) VALUES ('tenant_C')`);
    await enqueueJobs(db.pool, [
      job("q1.job"),
      ...Array.from({ length: 20 }, () => job("q1.job", { tenant_id: "tenant_B" })),
      ...Array.from({ length: 20 }, () => job("q1.job", { tenant_id: "tenant_C" })),
    ]);
    // Three tenants of weight 1, a batch of 30: each tenant's scan reads its share (11); tenant_A has one job.
    const first = await claimBatch(db.pool, { poolId: "p1", workerId: "w", limit: 30 });
    expect(first.jobs).toHaveLength(23);
    expect(first).toMatchObject({ bounds: [], hasMore: true });
    const second = await claimBatch(db.pool, { poolId: "p1", workerId: "w", limit: 30 });
    expect(second.jobs).toHaveLength(18);
    expect(second).toMatchObject({ bounds: [], hasMore: false });
  });
});
