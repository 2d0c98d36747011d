import { useTestDatabase } from "@porter/db/testing/test-database";
import { beforeAll, describe, expect, it } from "vitest";
import { controlPlane } from "../testing/fixtures";
import { claimJobs } from "./claim-jobs";
import { completeJobs } from "./complete-jobs";
import { enqueueJobs } from "./enqueue-jobs";
import { vacuumHotTable } from "./vacuum-hot-table";

const db = useTestDatabase();

/** The hot table's statistics as PostgreSQL reports them once this session's counters are flushed. */
const stats = async () => {
  await db.pool.query(`SELECT pg_stat_force_next_flush()`);
  const { rows } = await db.pool.query<{ dead: number; vacuums: number }>(
    `SELECT n_dead_tup::int AS dead, vacuum_count::int AS vacuums FROM pg_stat_user_tables WHERE relid = 'jobs'::regclass`,
  );
  return rows[0]!;
};

/** Enqueues, claims and acks `n` jobs: two dead row versions each in `jobs`. */
const churn = async (n: number) => {
  await enqueueJobs(db.pool, Array.from({ length: n }, (_, i) => ({ job_type: "q1.job", tenant_id: "tenant_A", payload: { i }, idempotency_key: `v-${Math.random()}` })));
  for (;;) {
    const claimed = await claimJobs(db.pool, { poolId: "p1", workerId: "w", limit: 500 });
    if (claimed.length === 0) break;
    await completeJobs(db.pool, claimed.map((c) => ({ id: c.id, leaseToken: c.leaseToken, attempt: c.attempt, result: null })));
  }
};

beforeAll(async () => {
  await controlPlane(db.pool, { queues: [{ id: "q1" }], tenants: [{ id: "tenant_A" }] });
});

describe("vacuumHotTable", () => {
  it("vacuums once dead versions pass the threshold, and not before", async () => {
    await churn(600);
    // Statistics reach the collector asynchronously: wait until the churn shows.
    for (let i = 0; (await stats()).dead < 1000 && i < 50; i++) await new Promise((r) => setTimeout(r, 100));
    const before = await stats();
    expect(before.dead).toBeGreaterThanOrEqual(1000);

    const skipped = await vacuumHotTable(db.pool, { minDead: before.dead + 1, liveFraction: 0 });
    expect(skipped.vacuumed).toBe(false);
    expect((await stats()).vacuums).toBe(before.vacuums);

    const ran = await vacuumHotTable(db.pool, { minDead: 1000, liveFraction: 0 });
    expect(ran).toMatchObject({ vacuumed: true });
    const after = await stats();
    expect(after.vacuums).toBe(before.vacuums + 1);
    expect(after.dead).toBeLessThan(before.dead);
  });
});
