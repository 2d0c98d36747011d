// Flow rollups against a recorded workload: everything goes through core's real paths (enqueue,
// claim, ack, fail, rescue, cancel, expiry) on a moved clock; then the rollups' counts must equal
// what the job rows say, and their percentiles fall within one bucket of the exact values computed
// from the rows' timestamps.
import type { TJobError } from "@porter/contracts";
import { useTestDatabase } from "@porter/db/testing/test-database";
import { beforeAll, describe, expect, it } from "vitest";
import { addFlow, bucketOf, emptyFlow, histogramQuantile, readFlow } from "../reads/flow";
import { controlPlane } from "../testing/control-plane-factory";
import { cancelQueuedJobs } from "./cancel-job";
import { type ClaimedJob, claimJobs } from "./claim-jobs";
import { completeJobs } from "./complete-jobs";
import { enqueueJobs } from "./enqueue-jobs";
import { expireJobs } from "./expire-jobs";
import { failJobs } from "./fail-jobs";
import { bucketSql } from "./flow-write";
import { handBackJobs } from "./hand-back-jobs";
import { rescueExpiredLeases } from "./rescue-expired-leases";
import { startJobs } from "./start-jobs";

const db = useTestDatabase();
const T0 = new Date("2026-11-30T10:00:00.000Z");
const at = (ms: number) => new Date(T0.getTime() + ms);
const error = (attempt: number, code: string): TJobError => ({
  code,
  class: "retryable",
  message: code,
  worker_version: "test",
  attempt,
  trace_id: "t",
  last_checkpoint: null,
});

/** A deterministic pseudo-random sequence (the workload is recorded, not random per run). */
const lcg = (seed: number) => () => {
  seed = (seed * 1103515245 + 12345) % 2 ** 31;
  return seed / 2 ** 31;
};

beforeAll(async () => {
  await controlPlane(db.pool, {
    queues: [
      { id: "q1", lease_seconds: 30, max_runtime_s: 600 },
      { id: "q2", lease_seconds: 30, max_runtime_s: 600 },
    ],
  });
});

const exactQuantile = (values: number[], q: number): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(1, Math.ceil(q * sorted.length)) - 1]!;
};

describe("flow rollups against a recorded workload", () => {
  it("count exactly what the job rows record, with percentiles within one bucket", async () => {
    const random = lcg(42);
    let n = 0;
    // Arrivals over 10 minutes, two queues, two tenants; one job with a deadline, one cancelled.
    for (let i = 0; i < 40; i++) {
      await enqueueJobs(
        db.pool,
        Array.from({ length: 1 + (i % 4) }, () => ({
          job_type: n % 3 === 0 ? "q2.job" : "q1.job",
          tenant_id: n % 2 === 0 ? "tenant_A" : "tenant_B",
          idempotency_key: `k${n}`,
          payload: { n: n++ },
          max_attempts: 3,
        })),
        { now: at(i * 15_000) },
      );
    }
    const [late] = await enqueueJobs(
      db.pool,
      [{ job_type: "q1.job", tenant_id: "tenant_A", payload: { late: true }, idempotency_key: "late", deadline_at: at(20_000).toISOString() }],
      {
        now: at(1_000),
      },
    );
    const [toCancel] = await enqueueJobs(
      db.pool,
      [{ job_type: "q2.job", tenant_id: "tenant_B", payload: { cancel: true }, idempotency_key: "cancel", not_before: at(3_600_000).toISOString() }],
      {
        now: at(2_000),
      },
    );
    expect(
      await cancelQueuedJobs(db.pool, { jobIds: [toCancel!.job_id], tenantIds: null, jobTypes: null, reason: "test", actor: "test", now: at(5_000) }),
    ).toHaveLength(1);
    expect((await expireJobs(db.pool, { now: at(25_000) })).expired).toBe(1);
    expect(late).toBeDefined();

    // Claims every few seconds; each attempt ends by ack, retry (two codes, one a throttle), death
    // or cancel after a run time from 0.3 ms to 40 s; one attempt is left to its lease.
    let clock = 30_000;
    let kept: ClaimedJob | undefined;
    let keptRound = -1;
    for (let round = 0; round < 400; round++) {
      clock += 2_000 + Math.floor(random() * 5_000);
      const claimed = await claimJobs(db.pool, { poolId: "p1", workerId: `w${round % 3}`, limit: 1 + (round % 6), now: at(clock) });
      if (claimed.length === 0 && clock > 700_000) break;
      for (const job of claimed) {
        if (!kept && round >= 10) {
          kept = job;
          keptRound = round;
          continue;
        }
        const end = at(clock + Math.round(0.3 + random() ** 3 * 40_000));
        const ref = { id: job.id, leaseToken: job.leaseToken, attempt: job.attempt };
        const roll = random();
        if (roll < 0.55 || job.attempt >= 3) {
          if (job.attempt >= 3 && roll < 0.2)
            await failJobs(db.pool, [{ ...ref, outcome: "failed", error: error(job.attempt, "BOOM"), next: { state: "DEAD" } }], end);
          else expect((await completeJobs(db.pool, [{ ...ref, result: null }], end)).completed).toEqual([job.id]);
        } else if (roll < 0.8) {
          const code = roll < 0.7 ? "BOOM" : "RATE_LIMITED";
          const runAt = at(end.getTime() - T0.getTime() + 1_000 + Math.floor(random() * 20_000));
          await failJobs(db.pool, [{ ...ref, outcome: "failed", error: error(job.attempt, code), next: { state: "RETRY_WAIT", runAt } }], end);
        } else if (roll < 0.9) {
          await failJobs(db.pool, [{ ...ref, outcome: "failed", error: error(job.attempt, "FATAL"), next: { state: "DEAD" } }], end);
        } else {
          await failJobs(db.pool, [{ ...ref, outcome: "cancelled", error: error(job.attempt, "CANCELLED"), next: { state: "CANCELLED" } }], end);
        }
      }
      if (keptRound >= 0 && round === keptRound + 1) expect((await rescueExpiredLeases(db.pool, { now: at(clock + 60_000) })).requeued).toBe(1);
    }
    expect(kept).toBeDefined();

    // The job rows' record.
    const one = async (sql: string): Promise<number> => Number((await db.pool.query<{ n: string }>(sql)).rows[0]!.n);
    const expected = {
      arrivals: await one("SELECT (SELECT count(*) FROM jobs) + (SELECT count(*) FROM finished_jobs) AS n"),
      starts: await one(
        "SELECT (SELECT count(*) FROM job_attempts) + (SELECT count(*) FROM finished_jobs WHERE state = 'SUCCEEDED') + (SELECT count(*) FROM jobs WHERE state = 'RUNNING') AS n",
      ),
      succeeded: await one("SELECT count(*) AS n FROM finished_jobs WHERE state = 'SUCCEEDED'"),
      retried: await one("SELECT count(*) AS n FROM job_attempts WHERE outcome = 'failed' AND retry_at IS NOT NULL"),
      dead: await one("SELECT count(*) AS n FROM finished_jobs WHERE state = 'DEAD'"),
      cancelled: await one("SELECT count(*) AS n FROM finished_jobs WHERE state = 'CANCELLED'"),
      expired: await one("SELECT count(*) AS n FROM finished_jobs WHERE state = 'EXPIRED'"),
      leaseExpiries: await one("SELECT count(*) AS n FROM job_attempts WHERE outcome = 'lease_expired'"),
      throttles: await one("SELECT count(*) AS n FROM job_attempts WHERE error ->> 'code' = 'RATE_LIMITED'"),
    };
    const flow = (await readFlow(db.pool, { from: T0, to: at(3_600_000) })).reduce(addFlow, emptyFlow());
    expect({
      arrivals: flow.arrivals,
      starts: flow.starts,
      succeeded: flow.succeeded,
      retried: flow.retried,
      dead: flow.dead,
      cancelled: flow.cancelled,
      expired: flow.expired,
      leaseExpiries: flow.leaseExpiries,
      throttles: flow.throttles,
    }).toEqual(expected);
    // The workload is not vacuous.
    expect(expected).toMatchObject({ leaseExpiries: 1, cancelled: expect.any(Number), expired: 1 });
    for (const k of ["succeeded", "retried", "dead", "throttles"] as const) expect(expected[k]).toBeGreaterThan(2);
    expect(flow.retriesByCode).toEqual({
      BOOM: await one("SELECT count(*) AS n FROM job_attempts WHERE outcome = 'failed' AND retry_at IS NOT NULL AND error ->> 'code' = 'BOOM'"),
      RATE_LIMITED: expected.throttles,
    });

    // Exact wait (ready → claim) and run (start → end) of every attempt, from the rows.
    const { rows: attempts } = await db.pool.query<{ wait_ms: number | null; run_ms: number | null }>(`
      WITH a AS (
        SELECT job_id, attempt, started_at, finished_at, outcome::text, retry_at FROM job_attempts
        UNION ALL
        SELECT job_id, attempt, claimed_at, finished_at, 'succeeded', NULL FROM finished_jobs WHERE state = 'SUCCEEDED'
        UNION ALL
        SELECT job_id, attempt, claimed_at, NULL, 'running', NULL FROM jobs WHERE state = 'RUNNING'
      ), created AS (
        SELECT job_id, created_at FROM jobs UNION ALL SELECT job_id, created_at FROM finished_jobs
      )
      SELECT extract(epoch FROM a.started_at - coalesce(p.retry_at, p.finished_at, c.created_at)) * 1000 AS wait_ms,
             CASE WHEN a.outcome IN ('succeeded', 'failed', 'cancelled') THEN extract(epoch FROM a.finished_at - a.started_at) * 1000 END AS run_ms
        FROM a JOIN created c ON c.job_id = a.job_id
        LEFT JOIN a p ON p.job_id = a.job_id AND p.attempt = a.attempt - 1`);
    const waits = attempts.map((r) => Number(r.wait_ms));
    const runs = attempts.filter((r) => r.run_ms !== null).map((r) => Number(r.run_ms));
    expect(waits).toHaveLength(flow.starts);
    // The wait histogram is written where an attempt ends (ack, fail, rescue): every attempt ended.
    expect(await one("SELECT count(*) AS n FROM jobs WHERE state = 'RUNNING'")).toBe(0);
    expect(flow.waitHistogram.reduce((s, n) => s + n, 0)).toBe(flow.starts);
    expect(runs).toHaveLength(flow.runs);
    expect(flow.waitMsSum).toBeCloseTo(
      waits.reduce((s, w) => s + w, 0),
      3,
    );
    expect(flow.runMsSum).toBeCloseTo(
      runs.reduce((s, w) => s + w, 0),
      3,
    );
    for (const q of [0.5, 0.95, 0.99]) {
      expect(Math.abs(histogramQuantile(flow.waitHistogram, q)!.bucket - bucketOf(exactQuantile(waits, q)))).toBeLessThanOrEqual(1);
      expect(Math.abs(histogramQuantile(flow.runHistogram, q)!.bucket - bucketOf(exactQuantile(runs, q)))).toBeLessThanOrEqual(1);
    }
    // Per group too: q2's tenant_B row alone.
    const [q2b] = await readFlow(db.pool, { from: T0, to: at(3_600_000), queueId: "q2", tenantId: "tenant_B" });
    expect(q2b!.arrivals).toBe(
      await one(
        "SELECT (SELECT count(*) FROM jobs WHERE queue_id = 'q2' AND tenant_id = 'tenant_B') + (SELECT count(*) FROM finished_jobs WHERE queue_id = 'q2' AND tenant_id = 'tenant_B') AS n",
      ),
    );
  });

  it("puts a duration in the bucket bucketOf says, edges and negatives included", async () => {
    const values = [-5, 0, 0.4, 0.5, 0.99, 1, 1.5, 2, 3, 4, 7.999, 8, 1023, 1024, 1025, 2 ** 26, 2 ** 27, 2 ** 30];
    const { rows } = await db.pool.query<{ b: number }>(`SELECT ${bucketSql("v")} AS b FROM unnest($1::float8[]) WITH ORDINALITY AS t(v, i) ORDER BY i`, [
      values,
    ]);
    expect(rows.map((r) => r.b)).toEqual(values.map(bucketOf));
  });

  it("counts the wait of attempts that end by rescue (started or not), hand-back, retry and ack, in the bucket of the claim's wait", async () => {
    const queue = "q2";
    const from = at(10 * 3_600_000);
    const flowNow = async () => (await readFlow(db.pool, { from, to: at(11 * 3_600_000), queueId: queue })).reduce(addFlow, emptyFlow());
    // What the first test left waiting (retries) is claimed and acked before this hour.
    const before = new Date(from.getTime() - 1);
    const left = await claimJobs(db.pool, { poolId: "p1", workerId: "w-left", limit: 1000, now: before });
    await completeJobs(
      db.pool,
      left.map((j) => ({ id: j.id, leaseToken: j.leaseToken, attempt: j.attempt, result: null })),
      before,
    );
    // Six jobs ready at from, claimed 3 s later (wait bucket of 3,000 ms), two of them into free slots.
    await enqueueJobs(
      db.pool,
      Array.from({ length: 6 }, (_, k) => ({ job_type: "q2.job", tenant_id: "tenant_A", payload: { k }, idempotency_key: `end-${k}`, max_attempts: 5 })),
      { now: from },
    );
    const claimAt = new Date(from.getTime() + 3_000);
    const claimed = await claimJobs(db.pool, { poolId: "p1", workerId: "w-end", limit: 6, start: 2, now: claimAt });
    expect(claimed).toHaveLength(6);
    const ref = (j: ClaimedJob) => ({ id: j.id, leaseToken: j.leaseToken, attempt: j.attempt });
    const [a, b, c, d, e, f] = claimed as [ClaimedJob, ClaimedJob, ClaimedJob, ClaimedJob, ClaimedJob, ClaimedJob];
    const later = (ms: number) => new Date(claimAt.getTime() + ms);
    expect((await completeJobs(db.pool, [{ ...ref(a), result: null }], later(10))).completed).toHaveLength(1);
    // A retry rewrites run_at: its wait is still the claim's (ready at `from`).
    await failJobs(db.pool, [{ ...ref(b), outcome: "failed", error: error(1, "BOOM"), next: { state: "RETRY_WAIT", runAt: later(600_000) } }], later(20));
    expect((await handBackJobs(db.pool, [ref(c)], later(30))).handedBack).toHaveLength(1);
    // d, e (prefetched, not started) and f (started) are left to their leases.
    expect((await startJobs(db.pool, [ref(f)], later(40))).started).toEqual([f.id]);
    const rescued = await rescueExpiredLeases(db.pool, { now: later(31_000) });
    expect(rescued.requeued).toBe(3);
    expect(rescued.notStarted).toBe(2);
    expect([d.isStarted, e.isStarted, f.isStarted]).toEqual([false, false, false]);
    const flow = await flowNow();
    expect(flow.starts).toBe(6);
    const bucket = bucketOf(3_000);
    expect(flow.waitHistogram[bucket]).toBe(6);
    expect(flow.waitHistogram.reduce((s, n) => s + n, 0)).toBe(6);
    // Only the ack and the retry ran: two run-time rows.
    expect(flow.runHistogram.reduce((s, n) => s + n, 0)).toBe(2);
    expect(flow.waitMsSum).toBeCloseTo(6 * 3_000, 3);
  });
});
