import { randomUUID } from "node:crypto";
import { PolicyCache } from "@porter/core";
import { useTestDatabase } from "@porter/db/testing/test-database";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { countStored, type ProducerFixtures, seedProducerFixtures } from "../testing/fixtures";
import { startTestServer, type TestServer } from "../testing/http-server";

// Admission control as a producer sees it over HTTP (issue 4): over the tenant's quota the answer
// is 429 with a Retry-After header, and nothing is stored. Core's side (buckets, backlog counts,
// defer, concurrent producers) is in packages/core/src/sql/admission.int.test.ts.
const db = useTestDatabase();
let server: TestServer;
let fx: ProducerFixtures;

beforeAll(async () => {
  fx = await seedProducerFixtures(db);
  // No policy cache: the knobs below change between tests.
  server = await startTestServer({ db: db.appPool, policyCache: new PolicyCache({ ttlMs: 0 }) });
});
afterAll(async () => {
  await server?.close();
});
beforeEach(async () => {
  await db.pool.query(`UPDATE tenants SET rate_per_second = NULL, backlog_cap = NULL`);
  await db.pool.query(`TRUNCATE jobs, idempotency_keys, rate_buckets`);
});

const enqueue = async (body: unknown) => {
  const res = await fetch(`${server.url}/api/trpc/producer.enqueue`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${fx.keyA}` },
    body: JSON.stringify(body),
  });
  return { status: res.status, retryAfter: res.headers.get("retry-after"), body: await res.json() };
};
const job = () => ({ job_type: "fx.email", payload: { message_ref: "s3://mail/1" }, idempotency_key: `k-${randomUUID()}` });

describe("producer.enqueue under admission control", () => {
  it("answers 429 with Retry-After past the tenant's backlog cap, and stores nothing", async () => {
    await db.pool.query(`UPDATE tenants SET backlog_cap = 2 WHERE id = $1`, [fx.tenantA]);
    expect((await enqueue(job())).status).toBe(200);
    expect((await enqueue(job())).status).toBe(200);
    const before = await countStored(db.pool);
    const over = await enqueue(job());
    expect(over.status).toBe(429);
    expect(over.body.error.data).toMatchObject({ code: "TOO_MANY_REQUESTS", httpStatus: 429 });
    expect(Number(over.retryAfter)).toBeGreaterThanOrEqual(1);
    expect(over.retryAfter).toBe(String(over.body.error.data.retryAfterS));
    expect(await countStored(db.pool)).toEqual(before);
  });

  it("answers 429 with Retry-After past the tenant's arrival rate, for a whole batch, and stores nothing", async () => {
    await db.pool.query(`UPDATE tenants SET rate_per_second = 0.5 WHERE id = $1`, [fx.tenantA]);
    expect((await enqueue(job())).status).toBe(200);
    const before = await countStored(db.pool);
    const over = await enqueue(job());
    expect(over.status).toBe(429);
    // One token a 2 s: the producer is told to come back when the next one is there.
    expect(Number(over.retryAfter)).toBeGreaterThanOrEqual(1);
    expect(Number(over.retryAfter)).toBeLessThanOrEqual(2);
    expect(await countStored(db.pool)).toEqual(before);

    const batch = await fetch(`${server.url}/api/trpc/producer.enqueueBatch`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${fx.keyA}` },
      body: JSON.stringify({ jobs: [job(), job(), job()] }),
    });
    expect(batch.status).toBe(429);
    expect(Number(batch.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(await countStored(db.pool)).toEqual(before);
  });
});
