import { setTimeout as sleep } from "node:timers/promises";
import { useTestDatabase } from "@porter/db/testing/test-database";
import { beforeEach, describe, expect, it } from "vitest";
import { claimTimes } from "../testing/claim-times";
import { controlPlane } from "../testing/control-plane-factory";
import { type ClaimedJob, claimJobs } from "./claim-jobs";
import { completeJobs } from "./complete-jobs";
import { type EnqueueInput, enqueueJobs } from "./enqueue-jobs";
import { redriveJobs } from "./redrive-jobs";
import { rescueExpiredLeases } from "./rescue-expired-leases";

// Weighted fair share between tenants (issue 4): claims follow the tenants' weights whatever their
// backlogs, and a tenant's burst cannot make another tenant's work wait behind it.
const db = useTestDatabase();
const WEIGHTS: Record<string, number> = { A: 1, B: 1, C: 2 };
let n = 0;
const jobs = (tenant: string, count: number, queue = "q1"): EnqueueInput[] =>
  Array.from({ length: count }, () => ({ job_type: `${queue}.job`, tenant_id: tenant, payload: { n: n++ }, idempotency_key: `k${n}` }));
/** Enqueues in chunks of 1000 (one transaction each), as a bursting producer would. */
const burst = async (tenant: string, count: number, queue = "q1") => {
  for (let done = 0; done < count; done += 1000) await enqueueJobs(db.pool, jobs(tenant, Math.min(1000, count - done), queue));
};
const ack = (batch: ClaimedJob[]) =>
  completeJobs(
    db.pool,
    batch.map((c) => ({ id: c.id, leaseToken: c.leaseToken, attempt: c.attempt, result: null })),
  );
const percentile = (values: number[], p: number) => [...values].sort((a, b) => a - b)[Math.ceil(p * values.length) - 1]!;

beforeEach(async () => {
  await db.pool.query(`TRUNCATE jobs, finished_jobs, idempotency_keys, fair_clocks, job_types, queues, pools, tenants CASCADE`);
  await controlPlane(db.pool, {
    pool: "p1",
    queues: [{ id: "q1" }],
    tenants: Object.keys(WEIGHTS).map((id) => ({ id })),
  });
  for (const [id, weight] of Object.entries(WEIGHTS)) await db.pool.query(`UPDATE tenants SET weight = $2 WHERE id = $1`, [id, weight]);
});

/** Claims (and acks) batches of 10 until `jobId` is among them; how many batches that took. */
const batchesUntilClaimed = async (jobId: string): Promise<number> => {
  for (let batches = 1; ; batches++) {
    const batch = await claimJobs(db.pool, { poolId: "p1", workerId: "w", limit: 10 });
    await ack(batch);
    if (batch.some((c) => c.jobId === jobId) || batch.length === 0) return batches;
  }
};

describe("weighted fair share", () => {
  it.each([
    { noisy: "C", backlog: { A: 400, B: 400, C: 4000 } },
    { noisy: "A", backlog: { A: 4000, B: 400, C: 800 } },
  ])("gives tenants 1/1/2 their weights' shares while all have work ($noisy with a 10× backlog)", async ({ noisy, backlog }) => {
    // The noisy tenant enqueues first: arriving first must not buy it more than its share.
    for (const tenant of [noisy, ...["A", "B", "C"].filter((t) => t !== noisy)]) await burst(tenant, backlog[tenant as "A"]);
    // Three claimers on separate connections, batches of 10, acking as they go.
    const order: Array<{ tenant: string; at: number; vft: number }> = [];
    const { rows: vfts } = await db.pool.query<{ id: string; vft: number }>(`SELECT id::text, vft FROM jobs`);
    const vftOf = new Map(vfts.map((r) => [r.id, r.vft]));
    await Promise.all(
      Array.from({ length: 3 }, async (_, i) => {
        for (;;) {
          const batch = await claimJobs(db.pool, { poolId: "p1", workerId: `w${i}`, limit: 10 });
          if (batch.length === 0) return;
          const times = await claimTimes(db.pool, batch);
          for (const c of batch) order.push({ tenant: c.tenantId, at: times.get(c.id)!.claimedAt.getTime(), vft: vftOf.get(c.id)! });
          await ack(batch);
        }
      }),
    );
    order.sort((a, b) => a.at - b.at || a.vft - b.vft);
    expect(order).toHaveLength(Object.values(backlog).reduce((a, b) => a + b, 0));

    // While all three had backlog: the claims before any tenant's last job was claimed.
    const lastOf = (tenant: string) => order.map((o) => o.tenant).lastIndexOf(tenant);
    const contended = order.slice(0, Math.min(...["A", "B", "C"].map(lastOf)));
    const totalWeight = Object.values(WEIGHTS).reduce((a, b) => a + b, 0);
    const shares = Object.fromEntries(Object.keys(WEIGHTS).map((t) => [t, contended.filter((o) => o.tenant === t).length / contended.length]));
    const normalized = Object.keys(WEIGHTS).map((t) => shares[t]! / (WEIGHTS[t]! / totalWeight));
    const jain = normalized.reduce((a, b) => a + b, 0) ** 2 / (normalized.length * normalized.reduce((a, b) => a + b * b, 0));
    console.info(
      `[fairness] noisy ${noisy}: over ${contended.length} contended claims shares `
        + `A ${shares.A!.toFixed(3)} B ${shares.B!.toFixed(3)} C ${shares.C!.toFixed(3)} (weights 0.25/0.25/0.5), Jain ${jain.toFixed(4)}`,
    );
    for (const t of Object.keys(WEIGHTS)) {
      expect(Math.abs(shares[t]! - WEIGHTS[t]! / totalWeight)).toBeLessThanOrEqual(0.1 * (WEIGHTS[t]! / totalWeight));
    }
    expect(jain).toBeGreaterThanOrEqual(0.95);
    expect(contended.length).toBeGreaterThan(1200);
  });

  it("a 10k burst of one tenant does not delay a later single job of another beyond the first batches", async () => {
    await burst("A", 10_000);
    const [single] = await enqueueJobs(db.pool, jobs("B", 1));
    const batches = await batchesUntilClaimed(single!.job_id);
    console.info(`[fairness] a single job behind a 10k burst was claimed in batch ${batches} of 10`);
    expect(batches).toBeLessThanOrEqual(2);
  });
});

describe("redrive", () => {
  it("a redrive of 2k DEAD jobs of one tenant queues them by fair share, not ahead of everyone", async () => {
    await burst("A", 2_000);
    // DEAD: single-attempt jobs whose (ghost) worker lost its lease.
    await db.pool.query(
      `UPDATE jobs SET state = 'RUNNING', attempt = max_attempts, claimed_at = now(), started_at = now(), lease_owner = 'ghost',
                       lease_token = nextval('lease_token_seq'), lease_until = now() - interval '1 second'`,
    );
    while ((await rescueExpiredLeases(db.pool)).dead > 0);
    expect((await redriveJobs(db.pool, { filter: { tenantId: "A" }, actor: "test:fairness" })).redriven).toHaveLength(2_000);
    const [single] = await enqueueJobs(db.pool, jobs("B", 1));
    const batches = await batchesUntilClaimed(single!.job_id);
    console.info(`[fairness] a single job behind a 2k redrive was claimed in batch ${batches} of 10`);
    expect(batches).toBeLessThanOrEqual(2);
  });
});

describe("quiet tenants' waits", () => {
  it("stay within 2× of their waits without the noisy tenant (p99, enqueue → claim)", async () => {
    // Two identical lanes measured at the same time, under the same machine noise: pool `alone`
    // serves quiet tenants A and B; pool `noisy` serves A, B and C with a 10k backlog (weight 2).
    await controlPlane(db.pool, { pool: "alone", queues: [{ id: "qa" }], tenants: [] });
    await controlPlane(db.pool, { pool: "noisy", queues: [{ id: "qn" }], tenants: [] });
    // A p99 of 300 waits is the third-worst: one stall of a loaded CI machine in one lane decides
    // it. The lanes are measured again once when the first measurement misses the bound.
    for (let round = 1; ; round++) {
      const { waits, backlog, p } = await measureLanes();
      expect(waits.alone).toHaveLength(300);
      expect(waits.noisy).toHaveLength(300);
      expect(backlog).toBeGreaterThan(1000); // C was backlogged throughout: the noisy lane ran full
      if (p("noisy", 0.99) <= 2 * p("alone", 0.99) || round === 2) {
        expect(p("noisy", 0.99)).toBeLessThanOrEqual(2 * p("alone", 0.99));
        break;
      }
    }
  });
});

/** One measurement of both lanes (see the test above): quiet tenants' waits per lane, C's backlog left. */
const measureLanes = async () => {
  await db.pool.query(`DELETE FROM jobs WHERE queue_id IN ('qa', 'qn')`); // a fresh start for each measurement
  await burst("C", 10_000, "qn");
  const waits: Record<string, number[]> = { alone: [], noisy: [] };
  let isProducing = true;
  let quietLeft = 0;
  let drainUntil = Infinity;
  const producer = async () => {
    // A and B each enqueue one job every ~20 ms into both lanes, in one transaction (same created_at).
    for (let tick = 0; tick < 150; tick++) {
      await enqueueJobs(db.pool, [...jobs("A", 1, "qa"), ...jobs("B", 1, "qa"), ...jobs("A", 1, "qn"), ...jobs("B", 1, "qn")]);
      quietLeft += 4;
      await sleep(10);
    }
    isProducing = false;
    drainUntil = Date.now() + 5_000;
  };
  const claimer = async (pool: "alone" | "noisy", i: number) => {
    // Each lane: two claimers, batches of 10, a 25 ms pause between batches (a busy lane's pace).
    while (isProducing || (quietLeft > 0 && Date.now() < drainUntil)) {
      const batch = await claimJobs(db.pool, { poolId: pool, workerId: `${pool}-${i}`, limit: 10 });
      const times = await claimTimes(db.pool, batch);
      for (const c of batch) {
        if (c.tenantId === "C") continue;
        waits[pool]!.push(times.get(c.id)!.claimedAt.getTime() - times.get(c.id)!.createdAt.getTime());
        quietLeft -= 1;
      }
      await ack(batch);
      await sleep(25);
    }
  };
  await Promise.all([producer(), claimer("alone", 0), claimer("alone", 1), claimer("noisy", 0), claimer("noisy", 1)]);

  const { rows } = await db.pool.query(`SELECT count(*)::int AS n FROM jobs WHERE tenant_id = 'C' AND state = 'READY'`);
  const p = (lane: string, q: number) => percentile(waits[lane]!, q);
  console.info(
    `[fairness] quiet tenants' waits (${waits.alone!.length}/${waits.noisy!.length} jobs): alone p50 ${p("alone", 0.5)} ms `
      + `p99 ${p("alone", 0.99)} ms; with a 10k-job noisy tenant p50 ${p("noisy", 0.5)} ms p99 ${p("noisy", 0.99)} ms; `
      + `${10_000 - rows[0].n} noisy jobs claimed meanwhile; p90 ${p("alone", 0.9)}/${p("noisy", 0.9)} max ${p("alone", 1)}/${p("noisy", 1)}`,
  );
  return { waits, backlog: rows[0].n as number, p };
};
