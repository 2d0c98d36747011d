import { useTestDatabase } from "@porter/db/testing/test-database";
import { describe, expect, it } from "vitest";
import { controlPlane, type QueueRow } from "../testing/control-plane-factory";
import { cloneJobs } from "../testing/fixtures";
import { enqueueJobs } from "./enqueue-jobs";

// Issue 15, claim at depth: a tenant listed in fair_clocks with no claimable work (its jobs all
// ran) must cost the claim one index probe, not a read of the whole jobs table. Written as an
// EXISTS, the probe's generic plan was a sequential scan of jobs (1.0–2.3 s per claim at 1M ready
// rows of another tenant). Every path is checked: the pick's probes and the bounds' probes.
//
// What is counted is the rows the claim read from jobs by sequential scans, not the number of
// scans: a first version counted scans and saw one or two in loaded CI runs. A scan that stops at
// its first row costs nothing at any depth; the defect reads the whole table, which this catches.
const db = useTestDatabase();
const READY = 20_000;

const setup = async (queues: Array<Omit<QueueRow, "pool_id">>) => {
  await db.pool.query(`TRUNCATE jobs, finished_jobs, idempotency_keys, fair_clocks, job_types, queues, pools, tenants CASCADE`);
  await controlPlane(db.pool, { pool: { id: "p1" }, queues, tenants: ["tenant_A", "tenant_B"] });
  // tenant_B once had work in every queue (its fair_clocks rows stay), none now.
  await enqueueJobs(
    db.pool,
    queues.map((q, i) => ({ job_type: `${q.id}.job`, tenant_id: "tenant_B", payload: {}, idempotency_key: `b${i}` })),
  );
  await db.pool.query(`DELETE FROM jobs WHERE tenant_id = 'tenant_B'`);
  // READY jobs of tenant_A in the first queue, copied from one enqueued row (as the bench generates them).
  await enqueueJobs(db.pool, [{ job_type: `${queues[0]!.id}.job`, tenant_id: "tenant_A", payload: {}, idempotency_key: "a0" }]);
  await cloneJobs(db.pool, { template: "a0", count: READY, prefix: "a" });
  // The plans under test are the planner's choice from these statistics: autovacuum must not
  // change them between this ANALYZE and the claim (a concurrent vacuum's visibility map and
  // page counts, or an analyze of a small table, can move a claim's plan in a loaded run).
  for (const table of PLANNED) await db.pool.query(`ALTER TABLE ${table} SET (autovacuum_enabled = off)`);
  await db.pool.query(`VACUUM ANALYZE ${PLANNED.join(", ")}`);
};

/** Every table the claim's statements read: their statistics are pinned before each claim. */
const PLANNED = ["jobs", "queues", "pools", "tenants", "fair_clocks", "job_types", "resource_keys", "rate_buckets"];

/** Claims in a transaction of its own; returns what it claimed and the rows it read from jobs by sequential scans. */
const seqReadsOfClaim = async (limit: number): Promise<{ claimed: number; seqRowsRead: number }> => {
  const client = await db.pool.connect();
  try {
    await client.query("BEGIN");
    // The claim's statements as every worker runs them after its first few claims: PL/pgSQL keeps
    // a generic plan once it costs no more than the custom ones, and a fresh connection's first
    // calls take custom plans (which one a run saw varied with the pool's connection reuse).
    await client.query("SET LOCAL plan_cache_mode = force_generic_plan");
    const { rows } = await client.query<{ n: number }>(`SELECT count(*)::int AS n FROM porter_claim('p1', 'w', $1, NULL, $1) WHERE bound IS NULL`, [limit]);
    const { rows: stats } = await client.query<{ seq_tup_read: string }>(`SELECT seq_tup_read FROM pg_stat_xact_user_tables WHERE relname = 'jobs'`);
    await client.query("COMMIT");
    return { claimed: rows[0]!.n, seqRowsRead: Number(stats[0]!.seq_tup_read) };
  } finally {
    client.release();
  }
};

/** A claim of 50 takes `claimed` jobs and reads less than a tenth of jobs sequentially (the defect read it all). */
const expectShallow = async (claimed: number) => {
  const claim = await seqReadsOfClaim(50);
  expect(claim.claimed).toBe(claimed);
  expect(claim.seqRowsRead).toBeLessThan(READY / 10);
};

describe("the claim at depth, with a tenant out of work in fair_clocks", () => {
  it("fast path: probes jobs_claim_idx, never scans jobs", async () => {
    await setup([{ id: "q1" }]);
    await expectShallow(50);
  });

  it("queues path (a capped queue in the pool), with the cap's bound probed", async () => {
    await setup([{ id: "q1", concurrency_cap: 10 }, { id: "q2" }]);
    await expectShallow(10);
  });

  it("full path (a tenant quota), with the quota's bound probed", async () => {
    await setup([{ id: "q1" }, { id: "q2" }]);
    await db.pool.query(`UPDATE tenants SET max_running = 10 WHERE id = 'tenant_A'`);
    await expectShallow(10);
  });

  it("full path (a pool cap), with the pool's bound probed", async () => {
    await setup([{ id: "q1" }, { id: "q2" }]);
    await db.pool.query(`UPDATE pools SET concurrency_cap = 10 WHERE id = 'p1'`);
    await expectShallow(10);
  });
});
