import { setTimeout as sleep } from "node:timers/promises";
import { useTestDatabase } from "@porter/db/testing/test-database";
import { beforeEach, describe, expect, it } from "vitest";
import { claimTimesOf } from "../testing/claim-times";
import { controlPlane } from "../testing/control-plane-factory";
import { claimJobs } from "./claim-jobs";
import { completeJobs } from "./complete-jobs";
import { type EnqueueInput, enqueueJobs } from "./enqueue-jobs";
import { runMaintenance } from "./maintenance";

// Priority aging (issue 4): a waiting job's priority rises with its wait so that, on a queue with
// aging_s, low-priority work starts within about aging_s even under a constant stream of
// high-priority work; without aging it starves.
const db = useTestDatabase();
const AGING_S = 2;
/** Maintenance tick, claim loop and machine noise. */
const MARGIN_S = 1;
let n = 0;
const jobs = (count: number, priority: number): EnqueueInput[] =>
  Array.from({ length: count }, () => ({ job_type: "q1.job", tenant_id: "tenant_A", payload: { n: n++ }, idempotency_key: `k${n}`, priority }));

beforeEach(async () => {
  await db.pool.query(`TRUNCATE jobs, finished_jobs, idempotency_keys, fair_clocks, job_types, queues, pools, tenants CASCADE`);
  await controlPlane(db.pool, { queues: [{ id: "q1" }] });
});

type Run = { low: { waitS: number; priority: number } | null; batches: number[]; highClaimed: number };

/**
 * A low-priority job (priority 0) under a constant stream of priority-90 work for up to `ms`: a
 * producer keeps at least 300 high jobs ready (60 claims' worth: a producer stalled by a loaded
 * machine must not let the stream run dry, which would hand the low job out without aging), a claimer claims and acks batches of 5 as fast as
 * it can, and maintenance runs every 200 ms — each on its own connection. Ends when the low job
 * is claimed or the time is up.
 */
const starve = async (ms: number): Promise<Run> => {
  await enqueueJobs(db.pool, jobs(400, 90));
  const [lowJob] = await enqueueJobs(db.pool, jobs(1, 0));
  const until = Date.now() + ms;
  const run: Run = { low: null, batches: [], highClaimed: 0 };
  const isRunning = () => run.low === null && Date.now() < until;
  const producer = async () => {
    while (isRunning()) {
      const { rows } = await db.pool.query(`SELECT count(*)::int AS n FROM jobs WHERE state = 'READY' AND priority >= 90`);
      if (rows[0].n < 300) await enqueueJobs(db.pool, jobs(200, 90));
      await sleep(5);
    }
  };
  const claimer = async () => {
    while (isRunning()) {
      const batch = await claimJobs(db.pool, { poolId: "p1", workerId: "w", limit: 5 });
      run.batches.push(batch.length);
      const low = batch.find((c) => c.jobId === lowJob!.job_id);
      if (low) {
        const times = await claimTimesOf(db.pool, low);
        run.low = { waitS: (times.claimedAt.getTime() - times.createdAt.getTime()) / 1000, priority: low.priority };
      }
      run.highClaimed += batch.length - (low ? 1 : 0);
      await completeJobs(
        db.pool,
        batch.map((c) => ({ id: c.id, leaseToken: c.leaseToken, attempt: c.attempt, result: null })),
      );
    }
  };
  const maintenance = async () => {
    while (isRunning()) {
      await runMaintenance(db.pool);
      await sleep(200);
    }
  };
  await Promise.all([producer(), claimer(), maintenance()]);
  return run;
};

describe("priority aging", () => {
  it("starts a low-priority job within aging_s under a constant stream of high-priority work", async () => {
    await db.pool.query(`UPDATE queues SET aging_s = $1`, [AGING_S]);
    const run = await starve((AGING_S + MARGIN_S + 2) * 1000);
    console.info(
      `[aging] aging_s=${AGING_S}: low job started after ${run.low?.waitS.toFixed(2)} s at effective priority `
        + `${run.low?.priority}; ${run.highClaimed} high jobs started meanwhile in ${run.batches.length} batches`,
    );
    expect(run.low).not.toBeNull();
    // It started because it aged — it had reached the high class (effective = floor(wait/aging_s·100) ≥ 90
    // needs wait ≥ 0.9·aging_s) — not because the high work ran out.
    expect(run.low!.priority).toBeGreaterThanOrEqual(90);
    expect(run.low!.waitS).toBeGreaterThanOrEqual(0.9 * AGING_S);
    expect(run.low!.waitS).toBeLessThanOrEqual(AGING_S + MARGIN_S);
    // Every claim got a full batch: the aging pass never hid the ready work from a claim (claims
    // wait for it instead of skipping the rows it rewrites).
    expect(run.batches.slice(0, -1).every((size) => size === 5)).toBe(true);
    // The producer's priority is kept for the record.
    const { rows } = await db.pool.query(`SELECT priority FROM finished_jobs WHERE priority < 90`);
    expect(rows).toEqual([{ priority: 0 }]);
  });

  it("without aging the same job is still waiting after the same time (the bound is the mechanism)", async () => {
    const run = await starve((AGING_S + MARGIN_S) * 1000);
    console.info(`[aging] aging off: low job not started after ${AGING_S + MARGIN_S} s; ${run.highClaimed} high jobs started`);
    expect(run.low).toBeNull();
    expect(run.batches.every((size) => size === 5)).toBe(true); // the stream never ran dry
    expect(run.highClaimed).toBeGreaterThan(50);
    const { rows } = await db.pool.query(`SELECT priority, state FROM jobs WHERE priority < 90`);
    expect(rows).toEqual([{ priority: 0, state: "READY" }]);
  });
});
