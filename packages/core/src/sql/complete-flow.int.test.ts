// The ack's flow rows (complete-jobs.ts, flow-write.ts `flowEndedSql`): one batch of acks over
// several queues and tenants, with waits and runs set to known durations, adds exactly the rollup
// counters and sums and the wait and run histogram buckets the contract gives (bucket 0 below 1 ms,
// bucket k for [2^(k-1), 2^k) ms, the last bucket 28 for anything longer), per group.
import { useTestDatabase } from "@porter/db/testing/test-database";
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { controlPlane } from "../testing/control-plane-factory";
import { claimJobs } from "./claim-jobs";
import { completeJobs } from "./complete-jobs";
import { enqueueJobs } from "./enqueue-jobs";

const db = useTestDatabase();

/** The histogram's bucket of a duration, as docs/observability.md states it. */
const bucketOf = (ms: number): number => (ms < 1 ? 0 : Math.min(28, Math.floor(Math.log2(ms)) + 1));

type Job = { queue: "q1" | "q2"; tenant: "tenant_A" | "tenant_B"; waitMs: number; runMs: number; started: boolean };

const base = new Date("2026-11-02T10:20:00Z");
let round = 0;

/**
 * Enqueues and claims `jobs`, sets each one's ready, claim and start times so that its wait and run
 * are the given durations when acked at one instant, acks them all in ONE statement and returns
 * the flow rows that statement added (the tables, and jobs a failed run left, are emptied first).
 */
const ackBatch = async (jobs: Job[]) => {
  await db.pool.query("DELETE FROM jobs; DELETE FROM flow_rollups; DELETE FROM flow_histograms");
  round++;
  await enqueueJobs(
    db.pool,
    jobs.map((j, i) => ({ job_type: `${j.queue}.job`, tenant_id: j.tenant, payload: { i }, idempotency_key: `r${round}-${i}` })),
    { notify: false },
  );
  // A claim takes each tenant's share of its limit: claim until every job runs.
  const claimed: Awaited<ReturnType<typeof claimJobs>> = [];
  for (let i = 0; i < 10 && claimed.length < jobs.length; i++) {
    claimed.push(...(await claimJobs(db.pool, { poolId: "p1", workerId: "w1", limit: jobs.length - claimed.length })));
  }
  expect(claimed).toHaveLength(jobs.length);
  const ackAt = new Date(base.getTime() + 30 * 60_000);
  // Each claimed job gets the durations of the job it was enqueued as (its payload's i).
  // In SQL: a JavaScript Date has no microseconds.
  for (const c of claimed) {
    const j = jobs[(c.payload as { i: number }).i]!;
    await db.pool.query(
      `UPDATE jobs SET claimed_at = $2::timestamptz - make_interval(secs => $3::float8 / 1000),
                       started_at = CASE WHEN $5 THEN $2::timestamptz - make_interval(secs => $3::float8 / 1000) END,
                       created_at = $2::timestamptz - make_interval(secs => ($3::float8 + $4::float8) / 1000),
                       run_at = $2::timestamptz - make_interval(secs => ($3::float8 + $4::float8) / 1000)
        WHERE id = $1`,
      [c.id, ackAt, j.runMs, j.waitMs, j.started],
    );
  }
  const out = await completeJobs(
    db.pool,
    claimed.map((c) => ({ id: c.id, leaseToken: c.leaseToken, attempt: c.attempt, result: null })),
    ackAt,
  );
  expect(out.stale).toEqual([]);
  const rollups = await db.pool.query<{ key: string; succeeded: string; runs: string; wait: number; run: number }>(
    `SELECT queue_id || '/' || tenant_id AS key, sum(succeeded)::text AS succeeded, sum(runs)::text AS runs,
            sum(wait_ms_sum) AS wait, sum(run_ms_sum) AS run
       FROM flow_rollups WHERE grain = 1 AND at = date_trunc('minute', $1::timestamptz) GROUP BY 1 ORDER BY 1`,
    [ackAt],
  );
  const hist = await db.pool.query<{ key: string; n: string }>(
    `SELECT queue_id || '/' || tenant_id || '/' || kind || bucket AS key, sum(n)::text AS n
       FROM flow_histograms WHERE grain = 1 AND at = date_trunc('minute', $1::timestamptz) GROUP BY 1 ORDER BY 1`,
    [ackAt],
  );
  return { rollups: rollups.rows, hist: Object.fromEntries(hist.rows.map((r) => [r.key, Number(r.n)])) };
};

/** What the contract says `jobs` add: rollups per group, histogram counts per group, kind and bucket. */
const expected = (jobs: Job[]) => {
  const rollups = new Map<string, { key: string; succeeded: string; runs: string; wait: number; run: number }>();
  const hist: Record<string, number> = {};
  for (const j of jobs) {
    const key = `${j.queue}/${j.tenant}`;
    const r = rollups.get(key) ?? { key, succeeded: "0", runs: "0", wait: 0, run: 0 };
    rollups.set(key, { key, succeeded: String(Number(r.succeeded) + 1), runs: String(Number(r.runs) + 1), wait: r.wait + j.waitMs, run: r.run + j.runMs });
    for (const [kind, ms] of [
      ["w", j.waitMs],
      ["r", j.runMs],
    ] as const) {
      const h = `${key}/${kind}${bucketOf(ms)}`;
      hist[h] = (hist[h] ?? 0) + 1;
    }
  }
  return { rollups: [...rollups.values()].sort((a, b) => (a.key < b.key ? -1 : 1)), hist };
};

const expectRows = (got: Awaited<ReturnType<typeof ackBatch>>, want: ReturnType<typeof expected>) => {
  expect(got.hist).toEqual(want.hist);
  expect(got.rollups.map((r) => ({ key: r.key, succeeded: r.succeeded, runs: r.runs }))).toEqual(
    want.rollups.map((r) => ({ key: r.key, succeeded: r.succeeded, runs: r.runs })),
  );
  for (const [i, r] of want.rollups.entries()) {
    expect(got.rollups[i]!.wait).toBeCloseTo(r.wait, 3);
    expect(got.rollups[i]!.run).toBeCloseTo(r.run, 3);
  }
};

beforeAll(async () => {
  await controlPlane(db.pool, { queues: [{ id: "q1" }, { id: "q2" }], pool: { id: "p1", worker_concurrency: 1000 } });
});

describe("the ack's flow rows, from one pass over the acked jobs", () => {
  it("count each group's attempts, sums and histogram buckets exactly, at the buckets' edges too", async () => {
    const jobs: Job[] = [
      { queue: "q1", tenant: "tenant_A", waitMs: 0.3, runMs: 3, started: true },
      { queue: "q1", tenant: "tenant_A", waitMs: 5, runMs: 3, started: true },
      { queue: "q1", tenant: "tenant_A", waitMs: 7.5, runMs: 2, started: true },
      { queue: "q1", tenant: "tenant_A", waitMs: 5, runMs: 100, started: false },
      { queue: "q1", tenant: "tenant_B", waitMs: 1000, runMs: 1, started: true },
      { queue: "q2", tenant: "tenant_A", waitMs: 0, runMs: 300_000_000, started: true },
      { queue: "q2", tenant: "tenant_A", waitMs: 1024, runMs: 0.999, started: false },
    ];
    const got = await ackBatch(jobs);
    // Written out, so the test does not only restate the code: q1/A waits 0.3, 5, 7.5, 5 ms → buckets
    // 0, 3, 3, 3; runs 3, 3, 2, 100 ms → 2, 2, 2, 7 (two of them one group of the statement's).
    expect(got.hist).toMatchObject({ "q1/tenant_A/w0": 1, "q1/tenant_A/w3": 3, "q1/tenant_A/r2": 3, "q1/tenant_A/r7": 1 });
    expect(got.hist).toMatchObject({ "q1/tenant_B/w10": 1, "q1/tenant_B/r1": 1, "q2/tenant_A/w0": 1, "q2/tenant_A/w11": 1 });
    expect(got.hist).toMatchObject({ "q2/tenant_A/r28": 1, "q2/tenant_A/r0": 1 });
    expectRows(got, expected(jobs));
  });

  it("agree with the contract for any batch (property)", async () => {
    const ms = fc.oneof(fc.double({ min: 0, max: 0.999, noNaN: true }), fc.integer({ min: 1, max: 200_000 }), fc.constantFrom(1, 2, 4, 1024, 2 ** 27));
    const job = fc.record({
      queue: fc.constantFrom("q1" as const, "q2" as const),
      tenant: fc.constantFrom("tenant_A" as const, "tenant_B" as const),
      waitMs: ms,
      runMs: ms,
      started: fc.boolean(),
    });
    await fc.assert(
      fc.asyncProperty(fc.array(job, { minLength: 1, maxLength: 40 }), async (jobs) => {
        // Durations in whole microseconds, as timestamptz keeps them.
        const exact = jobs.map((j) => ({ ...j, waitMs: Math.round(j.waitMs * 1000) / 1000, runMs: Math.round(j.runMs * 1000) / 1000 }));
        expectRows(await ackBatch(exact), expected(exact));
      }),
      { numRuns: 15 },
    );
  });
});
