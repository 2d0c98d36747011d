import { useTestDatabase } from "@porter/db/testing/test-database";
import { beforeEach, describe, expect, it } from "vitest";
import { controlPlane } from "../testing/control-plane-factory";
import { claimJobs } from "./claim-jobs";
import { completeJobs } from "./complete-jobs";
import { type EnqueueInput, enqueueJobs } from "./enqueue-jobs";
import { recoverResourceLimits, reportThrottle } from "./throttle";

// Rate limits and adaptive concurrency (issue 4): token buckets in PostgreSQL bound the starts of
// a resource key and of a tenant across concurrent claimers; a reported 429 halves a key's
// concurrency and pauses it, then it recovers one step per calm interval. The worker's side (a
// handler's throttle reaching the key) is apps/worker/src/runtime/throttle.int.test.ts.
const db = useTestDatabase();
let n = 0;
const jobs = (count: number, over: Partial<EnqueueInput> = {}): EnqueueInput[] =>
  Array.from({ length: count }, () => ({ job_type: "q1.job", tenant_id: "tenant_A", payload: { n: n++ }, idempotency_key: `k${n}`, ...over }));

beforeEach(async () => {
  await db.pool.query(`TRUNCATE jobs, finished_jobs, idempotency_keys, fair_clocks, rate_buckets, job_types, queues, pools, tenants, resource_keys CASCADE`);
  await controlPlane(db.pool, { queues: [{ id: "q1" }, { id: "q2" }] });
});

/**
 * `claimers` loops claiming as hard as they can (batches of 10, never acking) for `ms`; returns
 * every start time, in seconds from the first, as the database recorded it (microseconds).
 */
const claimHard = async (claimers: number, ms: number): Promise<number[]> => {
  const until = Date.now() + ms;
  let calls = 0;
  await Promise.all(
    Array.from({ length: claimers }, async (_, i) => {
      while (Date.now() < until) {
        await claimJobs(db.pool, { poolId: "p1", workerId: `w${i}`, limit: 10 });
        calls += 1;
      }
    }),
  );
  expect(calls).toBeGreaterThan(claimers * 10); // they did claim hard
  const { rows } = await db.pool.query<{ t: number }>(
    `SELECT extract(epoch FROM claimed_at - min(claimed_at) OVER ())::float8 AS t FROM jobs WHERE state = 'RUNNING' ORDER BY t`,
  );
  return rows.map((r) => r.t);
};

/**
 * The token-bucket bound, exactly: any window [a, b] holds at most burst + rate·(b − a) starts
 * (the bucket holds at most `burst` tokens at a and gains rate·(b − a) by b). The tightest windows
 * begin and end at starts, so every pair of starts is checked. Returns the worst excess (≤ 0
 * when the bound holds) and the most starts in any 1 s window.
 */
const bucketBound = (times: number[], rate: number, burst: number) => {
  let worst = -Infinity;
  let maxPerSecond = 0;
  for (let i = 0; i < times.length; i++) {
    if (i > 0 && times[i] === times[i - 1]) continue; // a window starts before all starts at its instant
    for (let j = i; j < times.length; j++) {
      if (j + 1 < times.length && times[j + 1] === times[j]) continue; // …and ends after them
      worst = Math.max(worst, j - i + 1 - (burst + rate * (times[j]! - times[i]!)));
      if (times[j]! - times[i]! <= 1) maxPerSecond = Math.max(maxPerSecond, j - i + 1);
    }
  }
  return { worst, maxPerSecond };
};

describe("start rates (token buckets)", () => {
  it("a resource key limited to R/s with burst B never starts more than B + R·T in any window of T", async () => {
    const R = 20;
    const B = 20;
    await db.pool.query(`INSERT INTO resource_keys (id, rate_per_second, burst) VALUES ('llm', $1, $2)`, [R, B]);
    await db.pool.query(`UPDATE queues SET resource_key_id = 'llm' WHERE id = 'q1'`);
    await enqueueJobs(db.pool, jobs(400));
    await enqueueJobs(db.pool, jobs(30, { job_type: "q2.job" })); // another queue of the pool: not limited
    const times = await claimHard(4, 3_000);
    const { rows } = await db.pool.query(`SELECT queue_id, count(*)::int AS n FROM jobs WHERE state = 'RUNNING' GROUP BY 1 ORDER BY 1`);
    expect(rows[1]).toEqual({ queue_id: "q2", n: 30 });

    const keyTimes = (
      await db.pool.query<{ t: number }>(
        `SELECT extract(epoch FROM claimed_at - min(claimed_at) OVER ())::float8 AS t FROM jobs
        WHERE state = 'RUNNING' AND queue_id = 'q1' ORDER BY t`,
      )
    ).rows.map((r) => r.t);
    const { worst, maxPerSecond } = bucketBound(keyTimes, R, B);
    const span = keyTimes.at(-1)!;
    console.info(
      `[rate-limits] resource key R=${R} B=${B}: ${keyTimes.length} starts over ${span.toFixed(2)} s, `
        + `max in any 1 s window ${maxPerSecond} (bound ${B + R}), worst excess over B + R·T ${worst.toFixed(3)}`,
    );
    expect(worst).toBeLessThanOrEqual(1e-6);
    expect(maxPerSecond).toBeLessThanOrEqual(B + R);
    // Not vacuous: the burst went at once and the key then ran at its rate.
    expect(keyTimes.filter((t) => t < 0.5).length).toBeGreaterThanOrEqual(B); // at a rate alone, at most R·0.5 + 1
    expect(keyTimes.length).toBeGreaterThanOrEqual(B + R * (span - 0.25));
    expect(times.length).toBe(keyTimes.length + 30);
  });

  it("a tenant limited to S starts/s never starts more than S + S·T in any window of T, across queues", async () => {
    const S = 10;
    await db.pool.query(`UPDATE tenants SET start_rate_per_second = $1 WHERE id = 'tenant_A'`, [S]);
    await enqueueJobs(db.pool, [...jobs(150), ...jobs(150, { job_type: "q2.job" })]);
    await enqueueJobs(db.pool, jobs(25, { tenant_id: "tenant_B" })); // another tenant: not limited
    await claimHard(4, 3_000);
    const times = (
      await db.pool.query<{ t: number }>(
        `SELECT extract(epoch FROM claimed_at - min(claimed_at) OVER ())::float8 AS t FROM jobs
        WHERE state = 'RUNNING' AND tenant_id = 'tenant_A' ORDER BY t`,
      )
    ).rows.map((r) => r.t);
    const { worst, maxPerSecond } = bucketBound(times, S, S); // burst = max(1, rate)
    const span = times.at(-1)!;
    console.info(
      `[rate-limits] tenant S=${S}: ${times.length} starts over ${span.toFixed(2)} s, `
        + `max in any 1 s window ${maxPerSecond} (bound ${2 * S}), worst excess ${worst.toFixed(3)}`,
    );
    expect(worst).toBeLessThanOrEqual(1e-6);
    expect(maxPerSecond).toBeLessThanOrEqual(2 * S);
    expect(times.length).toBeGreaterThanOrEqual(S + S * (span - 0.25));
    const { rows } = await db.pool.query(`SELECT count(*)::int AS n FROM jobs WHERE state = 'RUNNING' AND tenant_id = 'tenant_B'`);
    expect(rows[0].n).toBe(25);
  });
});

describe("adaptive concurrency (a provider's 429)", () => {
  const claim = async (at: Date, limit = 20) => claimJobs(db.pool, { poolId: "p1", workerId: "w", limit, now: at });
  const key = async () =>
    (await db.pool.query(`SELECT current_limit, throttled_until FROM resource_keys WHERE id = 'llm'`)).rows[0] as {
      current_limit: number | null;
      throttled_until: Date | null;
    };

  it("halves the key's limit, pauses it until Retry-After, then recovers one step per calm interval", async () => {
    await db.pool.query(`INSERT INTO resource_keys (id, concurrency_limit) VALUES ('llm', 8)`);
    await db.pool.query(`UPDATE queues SET resource_key_id = 'llm' WHERE id = 'q1'`);
    await enqueueJobs(db.pool, jobs(40));
    const t = new Date(Date.now() + 1_000);
    const ms = (offset: number) => new Date(t.getTime() + offset);
    const first = await claim(t);
    expect(first).toHaveLength(8);

    expect(await reportThrottle(db.pool, { resourceKeyId: "llm", retryAfterMs: 1_000, now: t })).toEqual({ currentLimit: 4, throttledUntil: ms(1_000) });
    // Nothing starts until Retry-After has passed, even with every slot free.
    await completeJobs(
      db.pool,
      first.map((c) => ({ id: c.id, leaseToken: c.leaseToken, attempt: c.attempt, result: null })),
      ms(10),
    );
    expect(await claim(ms(500))).toEqual([]);
    expect(await claim(ms(999))).toEqual([]);
    expect(await recoverResourceLimits(db.pool, { now: ms(900), calmMs: 0 })).toBe(0); // no recovery while throttled
    expect(await claim(ms(1_001))).toHaveLength(4);
    expect(await claim(ms(1_002))).toEqual([]);

    // Additive increase: +1 per calm 2 s, each step one more start, back to the configured limit.
    const steps: Array<number | null> = [];
    for (let s = 1; s <= 4; s++) {
      expect(await recoverResourceLimits(db.pool, { now: ms(s * 2_000 - 1), calmMs: 2_000 })).toBe(0); // not calm long enough
      expect(await recoverResourceLimits(db.pool, { now: ms(s * 2_000), calmMs: 2_000 })).toBe(1);
      steps.push((await key()).current_limit);
      expect(await claim(ms(s * 2_000 + 1))).toHaveLength(1);
    }
    expect(steps).toEqual([5, 6, 7, null]);
    const { rows } = await db.pool.query(`SELECT count(*)::int AS n FROM jobs WHERE state = 'RUNNING'`);
    expect(rows[0].n).toBe(8);
  });

  it("halves what is running when the key has no configured limit, and never below 1", async () => {
    await db.pool.query(`INSERT INTO resource_keys (id) VALUES ('llm')`);
    await db.pool.query(`UPDATE queues SET resource_key_id = 'llm' WHERE id = 'q1'`);
    await enqueueJobs(db.pool, jobs(12));
    const t = new Date(Date.now() + 1_000);
    expect(await claim(t, 6)).toHaveLength(6);
    expect((await reportThrottle(db.pool, { resourceKeyId: "llm", retryAfterMs: 100, now: t }))?.currentLimit).toBe(3);
    // The other 429s of the same burst (within a second) only extend the pause: one decrease per event.
    expect((await reportThrottle(db.pool, { resourceKeyId: "llm", retryAfterMs: 100, now: t }))?.currentLimit).toBe(3);
    const later = new Date(t.getTime() + 1_500);
    expect((await reportThrottle(db.pool, { resourceKeyId: "llm", retryAfterMs: 100, now: later }))?.currentLimit).toBe(1);
    const muchLater = new Date(t.getTime() + 3_000);
    expect((await reportThrottle(db.pool, { resourceKeyId: "llm", retryAfterMs: 100, now: muchLater }))?.currentLimit).toBe(1);
    // 6 running over a limit of 1: nothing more starts after the pause.
    expect(await claim(new Date(muchLater.getTime() + 200))).toEqual([]);
  });
});
