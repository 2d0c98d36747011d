import { AppError } from "@porter/contracts";
import { createPool } from "@porter/db/pool";
import { useTestDatabase } from "@porter/db/testing/test-database";
import { beforeEach, describe, expect, it } from "vitest";
import { controlPlane } from "../testing/control-plane-factory";
import { claimJobs } from "./claim-jobs";
import { type EnqueueInput, enqueueJobs } from "./enqueue-jobs";

// Admission control at enqueue (issue 4): a tenant over its arrival rate or backlog cap gets 429
// with Retry-After and nothing is stored — or, where its queue defers, the jobs are accepted at
// priority 0. The HTTP side (429 + Retry-After header) is in
// packages/api/src/routers/producer-admission.int.test.ts.
const db = useTestDatabase();
let n = 0;
const job = (over: Partial<EnqueueInput> = {}): EnqueueInput => ({
  job_type: "q1.job",
  tenant_id: "tenant_A",
  payload: { n: n++ },
  idempotency_key: `k${n}`,
  ...over,
});
const jobs = (count: number, over: Partial<EnqueueInput> = {}) => Array.from({ length: count }, () => job(over));
const t0 = new Date("2030-01-01T00:00:00Z");
const at = (ms: number) => new Date(t0.getTime() + ms);

/** Every row admission must not leave behind on a refusal. */
const stored = async () => {
  const { rows } = await db.pool.query(
    `SELECT (SELECT count(*) FROM jobs)::int AS jobs, (SELECT count(*) FROM finished_jobs)::int AS finished,
            (SELECT count(*) FROM idempotency_keys)::int AS keys, (SELECT count(*) FROM fair_clocks)::int AS clocks,
            (SELECT coalesce(sum(last_vft), 0)::float8 FROM fair_clocks) AS vft,
            (SELECT coalesce(sum(tokens), 0)::float8 FROM rate_buckets) AS tokens`,
  );
  return rows[0];
};

/** Runs `fn`, which must be refused with 429; returns the error. */
const refused = async (fn: () => Promise<unknown>): Promise<AppError> => {
  const error = await fn().then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(AppError);
  expect((error as AppError).code).toBe("TOO_MANY_REQUESTS");
  expect((error as AppError).httpStatus).toBe(429);
  expect((error as AppError).retryAfterS).toBeGreaterThanOrEqual(1);
  return error as AppError;
};

beforeEach(async () => {
  await db.pool.query(`TRUNCATE jobs, finished_jobs, idempotency_keys, fair_clocks, rate_buckets, job_types, queues, pools, tenants CASCADE`);
  await controlPlane(db.pool, { queues: [{ id: "q1" }, { id: "q2" }] });
});

describe("admission: arrival rate", () => {
  it("refuses past the token bucket with 429 and Retry-After, storing nothing; tokens refill with time", async () => {
    await db.pool.query(`UPDATE tenants SET rate_per_second = 5 WHERE id = 'tenant_A'`);
    expect(await enqueueJobs(db.pool, jobs(5), { now: t0 })).toHaveLength(5); // the burst: max(1, rate)
    const before = await stored();
    const error = await refused(() => enqueueJobs(db.pool, jobs(1), { now: t0 }));
    expect(error.retryAfterS).toBe(1);
    expect(error.details).toMatchObject({ tenant_id: "tenant_A" });
    expect(await stored()).toEqual(before);

    // 0.4 s later two tokens are back: a batch of 3 is refused whole, a batch of 2 fits.
    await refused(() => enqueueJobs(db.pool, jobs(3), { now: at(400) }));
    expect(await stored()).toEqual(before);
    expect(await enqueueJobs(db.pool, jobs(2), { now: at(400) })).toHaveLength(2);
    await refused(() => enqueueJobs(db.pool, jobs(1), { now: at(400) }));
    // Another tenant is not affected.
    expect(await enqueueJobs(db.pool, jobs(20, { tenant_id: "tenant_B" }), { now: at(400) })).toHaveLength(20);
  });

  it("asks for as long as the bucket needs to refill", async () => {
    await db.pool.query(`UPDATE tenants SET rate_per_second = 0.25 WHERE id = 'tenant_A'`);
    await enqueueJobs(db.pool, jobs(1), { now: t0 });
    expect((await refused(() => enqueueJobs(db.pool, jobs(1), { now: t0 }))).retryAfterS).toBe(4);
    expect((await refused(() => enqueueJobs(db.pool, jobs(1), { now: at(3_000) }))).retryAfterS).toBe(1);
    expect(await enqueueJobs(db.pool, jobs(1), { now: at(4_000) })).toHaveLength(1);
  });

  it("holds under concurrent producers on separate connections", async () => {
    await db.pool.query(`UPDATE tenants SET rate_per_second = 5 WHERE id = 'tenant_A'`);
    const producers = createPool(db.connectionString, { max: 16 });
    try {
      const outcomes = await Promise.allSettled(Array.from({ length: 16 }, () => enqueueJobs(producers, jobs(1), { now: t0 })));
      expect(outcomes.filter((o) => o.status === "fulfilled")).toHaveLength(5);
      for (const o of outcomes) if (o.status === "rejected") expect((o.reason as AppError).code).toBe("TOO_MANY_REQUESTS");
    } finally {
      await producers.end();
    }
    expect((await stored()).jobs).toBe(5);
  });
});

describe("admission: backlog cap", () => {
  it("refuses past the cap of queued jobs with 429, storing nothing; claims make room", async () => {
    await db.pool.query(`UPDATE tenants SET backlog_cap = 10 WHERE id = 'tenant_A'`);
    await enqueueJobs(db.pool, jobs(6));
    await enqueueJobs(db.pool, jobs(4, { job_type: "q2.job" })); // the cap spans the tenant's queues
    const before = await stored();
    const error = await refused(() => enqueueJobs(db.pool, jobs(1)));
    expect(error.message).toMatch(/backlog cap of 10/);
    expect(await stored()).toEqual(before);

    // Running jobs are not backlog: three claimed, three more admitted, not four.
    expect(await claimJobs(db.pool, { poolId: "p1", workerId: "w", limit: 3 })).toHaveLength(3);
    await refused(() => enqueueJobs(db.pool, jobs(4)));
    expect(await enqueueJobs(db.pool, jobs(3))).toHaveLength(3);
    await refused(() => enqueueJobs(db.pool, jobs(1)));
    expect(await stored()).toMatchObject({ jobs: 13, keys: 13 });
  });

  it("holds under concurrent producers on separate connections", async () => {
    await db.pool.query(`UPDATE tenants SET backlog_cap = 10 WHERE id = 'tenant_A'`);
    await enqueueJobs(db.pool, jobs(4));
    const producers = createPool(db.connectionString, { max: 16 });
    try {
      const outcomes = await Promise.allSettled(Array.from({ length: 16 }, () => enqueueJobs(producers, jobs(2))));
      expect(outcomes.filter((o) => o.status === "fulfilled")).toHaveLength(3);
    } finally {
      await producers.end();
    }
    const { rows } = await db.pool.query(`SELECT count(*)::int AS n FROM jobs WHERE tenant_id = 'tenant_A'`);
    expect(rows[0].n).toBe(10);
  });
});

describe("admission: defer", () => {
  it("accepts over-limit jobs of a deferring queue at priority 0, without spending tokens", async () => {
    await db.pool.query(`UPDATE tenants SET rate_per_second = 2 WHERE id = 'tenant_A'`);
    await db.pool.query(`UPDATE queues SET admission = 'defer' WHERE id = 'q1'`);
    const first = await enqueueJobs(db.pool, jobs(2, { priority: 70 }), { now: t0 });
    const over = await enqueueJobs(db.pool, jobs(3, { priority: 70 }), { now: t0 });
    const priorities = async (ids: string[]) =>
      (await db.pool.query(`SELECT priority FROM jobs WHERE job_id = ANY($1::uuid[])`, [ids])).rows.map((r) => r.priority);
    expect(await priorities(first.map((r) => r.job_id))).toEqual([70, 70]);
    expect(await priorities(over.map((r) => r.job_id))).toEqual([0, 0, 0]);

    // A batch that also holds jobs of a rejecting queue is refused whole.
    const before = await stored();
    await refused(() => enqueueJobs(db.pool, [job({ priority: 70 }), job({ job_type: "q2.job" })], { now: t0 }));
    expect(await stored()).toEqual(before);

    // Deferred jobs spent no tokens: a second later the full burst is back.
    const later = await enqueueJobs(db.pool, jobs(2, { priority: 70 }), { now: at(1_000) });
    expect(await priorities(later.map((r) => r.job_id))).toEqual([70, 70]);
    // The deferred class runs after the normal one.
    const claimed = await claimJobs(db.pool, { poolId: "p1", workerId: "w", limit: 7, now: at(1_000) });
    expect(claimed.map((c) => c.priority)).toEqual([70, 70, 70, 70, 0, 0, 0]);
  });
});
