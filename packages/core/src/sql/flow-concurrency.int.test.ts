// Flow rollups under real concurrency: several connections enqueue, claim and ack jobs of the same
// (queue, job type, tenant) in the same minute at once; totals are exact and nobody deadlocks or
// waits on another's rollup row inside its transaction. Then the hour fold (idempotent) and pruning.
import { useTestDatabase } from "@porter/db/testing/test-database";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { addFlow, emptyFlow, readFlow } from "../reads/flow";
import { controlPlane } from "../testing/control-plane-factory";
import { claimJobs } from "./claim-jobs";
import { completeJobs } from "./complete-jobs";
import { enqueueJobs } from "./enqueue-jobs";
import { FLOW_HOUR_RETENTION_MS, FLOW_MINUTE_RETENTION_MS, foldFlowHours, pruneFlow } from "./flow-fold";
import { absorbFlowTotals } from "./flow-totals";

const db = useTestDatabase();
const WRITERS = 6;
const pools: pg.Pool[] = [];

beforeAll(async () => {
  await controlPlane(db.pool, { queues: [{ id: "q1", lease_seconds: 60 }] });
});
afterAll(async () => {
  await Promise.all(pools.map((p) => p.end()));
});

describe("flow rollups under concurrency", () => {
  it("several connections enqueueing, claiming and acking the same group at once: exact totals, no deadlock", async () => {
    // One pool per writer (a process each, as far as PostgreSQL can tell: its own connections), as
    // the runtime role (its grants on the flow tables).
    for (let i = 0; i < WRITERS; i++) {
      const pool = new pg.Pool({ connectionString: db.appConnectionString, max: 2 });
      // An idle connection ended by the database's drop at teardown is not a failure of the test.
      pool.on("error", () => {});
      pools.push(pool);
    }
    const perWriter = 120;
    await Promise.all(
      pools.map(async (pool, w) => {
        for (let b = 0; b < perWriter; b += 20) {
          await enqueueJobs(
            pool,
            Array.from({ length: 20 }, (_, k) => ({ job_type: "q1.job", tenant_id: "tenant_A", payload: { w, k: b + k }, idempotency_key: `c-${w}-${b + k}` })),
          );
        }
      }),
    );
    // Claimers and ackers: every writer claims small batches and acks them, the acks of one batch
    // overlapping the next claim on the writer's other connection.
    let acked = 0;
    await Promise.all(
      pools.map(async (pool, w) => {
        let pending: Promise<unknown> = Promise.resolve();
        for (;;) {
          const claimed = await claimJobs(pool, { poolId: "p1", workerId: `w${w}`, limit: 7 });
          if (claimed.length === 0) break;
          await pending;
          pending = completeJobs(
            pool,
            claimed.map((c) => ({ id: c.id, leaseToken: c.leaseToken, attempt: c.attempt, result: null })),
          ).then((r) => {
            acked += r.completed.length;
          });
        }
        await pending;
      }),
    );
    const total = WRITERS * perWriter;
    expect(acked).toBe(total);
    const flow = (await readFlow(db.pool, { from: new Date(Date.now() - 3_600_000), to: new Date(Date.now() + 60_000) })).reduce(addFlow, emptyFlow());
    expect({ arrivals: flow.arrivals, starts: flow.starts, succeeded: flow.succeeded, runs: flow.runs }).toEqual({
      arrivals: total,
      starts: total,
      succeeded: total,
      runs: total,
    });
    expect(flow.waitHistogram.reduce((s, n) => s + n, 0)).toBe(total);
    expect(flow.runHistogram.reduce((s, n) => s + n, 0)).toBe(total);
    // Spread over shards: the writers' connections did not all share one row.
    const { rows } = await db.pool.query<{ n: number }>("SELECT count(DISTINCT shard)::int AS n FROM flow_rollups WHERE grain = 1");
    expect(rows[0]!.n).toBeGreaterThan(1);
  });

  it("folds completed hours idempotently, and prunes minutes past 14 days and hours past 90", async () => {
    await db.pool.query("DELETE FROM flow_rollups; DELETE FROM flow_histograms; DELETE FROM flow_retry_codes");
    const h0 = new Date("2026-11-30T08:00:00Z");
    const minute = (m: number) => new Date(h0.getTime() + m * 60_000);
    const rows: Array<[Date, number, number]> = [
      [minute(0), 0, 5],
      [minute(0), 3, 2],
      [minute(59), 9, 1],
      [minute(60), 0, 7], // the next hour
      [minute(125), 0, 100], // the hour of `now`: not complete, not folded
    ];
    for (const [at, shard, n] of rows) {
      await db.pool.query(
        `INSERT INTO flow_rollups (grain, at, queue_id, job_type, tenant_id, shard, arrivals, succeeded) VALUES (1, $1, 'q1', 'q1.job', 'tenant_A', $2, $3, $3)`,
        [at, shard, n],
      );
      await db.pool.query(
        `INSERT INTO flow_histograms (grain, at, queue_id, job_type, tenant_id, shard, kind, bucket, n) VALUES (1, $1, 'q1', 'q1.job', 'tenant_A', $2, 'r', 4, $3)`,
        [at, shard, n],
      );
      await db.pool.query(
        `INSERT INTO flow_retry_codes (grain, at, queue_id, job_type, tenant_id, shard, code, n) VALUES (1, $1, 'q1', 'q1.job', 'tenant_A', $2, 'BOOM', $3)`,
        [at, shard, n],
      );
    }
    const hours = async () =>
      (
        await db.pool.query<{ at: Date; arrivals: string; hist: string; codes: string }>(
          `SELECT r.at, r.arrivals::text,
                  (SELECT sum(n)::text FROM flow_histograms h WHERE h.grain = 60 AND h.at = r.at) AS hist,
                  (SELECT sum(n)::text FROM flow_retry_codes c WHERE c.grain = 60 AND c.at = r.at) AS codes
             FROM flow_rollups r WHERE r.grain = 60 ORDER BY r.at`,
        )
      ).rows.map((r) => [r.at.toISOString(), Number(r.arrivals), Number(r.hist), Number(r.codes)]);
    const now = minute(130);
    expect(await foldFlowHours(db.pool, { now })).toEqual({ hours: 2 });
    const folded = [
      ["2026-11-30T08:00:00.000Z", 8, 8, 8],
      ["2026-11-30T09:00:00.000Z", 7, 7, 7],
    ];
    expect(await hours()).toEqual(folded);
    // Again: the last hour is folded again while late batches may land (5 minutes), same result.
    await foldFlowHours(db.pool, { now: minute(122) });
    expect(await hours()).toEqual(folded);
    // A late minute of the last hour lands; a refold counts it once.
    await db.pool.query(
      `INSERT INTO flow_rollups (grain, at, queue_id, job_type, tenant_id, shard, arrivals) VALUES (1, $1, 'q1', 'q1.job', 'tenant_A', 5, 1)`,
      [minute(119)],
    );
    await foldFlowHours(db.pool, { now: minute(123) });
    await foldFlowHours(db.pool, { now: minute(124) });
    expect((await hours())[1]).toEqual(["2026-11-30T09:00:00.000Z", 8, 7, 7]);
    // Past the late window nothing is redone.
    expect(await foldFlowHours(db.pool, { now })).toEqual({ hours: 0 });
    // Readers of a long window use the hours (plus the minutes after them).
    const long = (await readFlow(db.pool, { from: new Date(h0.getTime() - 5 * 3_600_000), to: minute(180) })).reduce(addFlow, emptyFlow());
    expect(long.arrivals).toBe(8 + 8 + 100);

    // Pruning: at 14 days and a minute, the minutes of hour 8 go (hours stay); at 90 days the hours.
    expect(await pruneFlow(db.pool, { now: new Date(minute(60).getTime() + FLOW_MINUTE_RETENTION_MS), batch: 2 })).toEqual({ pruned: 9 });
    const left = await db.pool.query<{ grain: number; n: number }>("SELECT grain, count(*)::int AS n FROM flow_rollups GROUP BY grain ORDER BY grain");
    expect(left.rows).toEqual([
      { grain: 1, n: 3 },
      { grain: 60, n: 2 },
    ]);
    // As maintenance does (fold, then prune): the counters' totals take the last minutes first; pruning leaves unabsorbed ones.
    const late = new Date(minute(200).getTime() + FLOW_HOUR_RETENTION_MS);
    await pruneFlow(db.pool, { now: late });
    expect((await db.pool.query("SELECT at FROM flow_rollups")).rows).toEqual([{ at: minute(125) }]);
    await absorbFlowTotals(db.pool, { now: late });
    await pruneFlow(db.pool, { now: late });
    expect((await db.pool.query("SELECT 1 FROM flow_rollups UNION ALL SELECT 1 FROM flow_histograms UNION ALL SELECT 1 FROM flow_retry_codes")).rowCount).toBe(
      0,
    );
  });
});
