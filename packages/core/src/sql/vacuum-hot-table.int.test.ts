import { useTestDatabase } from "@porter/db/testing/test-database";
import { beforeAll, describe, expect, it } from "vitest";
import { controlPlane } from "../testing/control-plane-factory";
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
  await enqueueJobs(
    db.pool,
    Array.from({ length: n }, (_, i) => ({ job_type: "q1.job", tenant_id: "tenant_A", payload: { i }, idempotency_key: `v-${Math.random()}` })),
  );
  for (;;) {
    const claimed = await claimJobs(db.pool, { poolId: "p1", workerId: "w", limit: 500 });
    if (claimed.length === 0) break;
    await completeJobs(
      db.pool,
      claimed.map((c) => ({ id: c.id, leaseToken: c.leaseToken, attempt: c.attempt, result: null })),
    );
  }
};

beforeAll(async () => {
  // The migration tunes autovacuum to visit jobs early: keep it away, so only the calls here vacuum.
  await db.pool.query(`ALTER TABLE jobs SET (autovacuum_enabled = false)`);
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
    expect(ran).toMatchObject({ vacuumed: true, isPermitted: true });
    const after = await stats();
    expect(after.vacuums).toBe(before.vacuums + 1);
    expect(after.dead).toBeLessThan(before.dead);
  });

  it("as the runtime role: vacuums through MAINTAIN on PostgreSQL 17+, and on older servers reports it may not, running nothing", async () => {
    await churn(600);
    for (let i = 0; (await stats()).dead < 1000 && i < 50; i++) await new Promise((r) => setTimeout(r, 100));
    const before = await stats();
    const version = Number((await db.pool.query<{ v: string }>(`SHOW server_version_num`)).rows[0]!.v);

    const result = await vacuumHotTable(db.appPool, { minDead: 1000, liveFraction: 0 });
    const after = await stats();
    if (version >= 170000) {
      expect(result).toMatchObject({ vacuumed: true, isPermitted: true });
      expect(after.vacuums).toBe(before.vacuums + 1);
    } else {
      expect(result).toMatchObject({ vacuumed: false, isPermitted: false });
      expect(after.vacuums).toBe(before.vacuums);
      // The runtime role indeed may not: VACUUM skips the table (a warning, no error).
      await db.appPool.query(`VACUUM jobs`);
      expect((await stats()).vacuums).toBe(before.vacuums);
    }
  });

  it("where the leader may not vacuum, autovacuum's settings on jobs are aggressive: 1 % dead rows, unthrottled", async () => {
    const { rows } = await db.pool.query<{ options: string[] }>(`SELECT reloptions AS options FROM pg_class WHERE oid = 'jobs'::regclass`);
    expect(rows[0]!.options).toEqual(
      expect.arrayContaining(["autovacuum_vacuum_scale_factor=0.01", "autovacuum_vacuum_threshold=1000", "autovacuum_vacuum_cost_delay=0"]),
    );
  });
});
