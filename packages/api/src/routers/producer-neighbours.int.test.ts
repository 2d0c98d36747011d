import { randomUUID } from "node:crypto";
import { PolicyCache } from "@porter/core";
import { useTestDatabase } from "@porter/db/testing/test-database";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ProducerFixtures, seedProducerFixtures } from "../testing/fixtures";
import { startTestServer, type TestServer, type TrpcReplyBody } from "../testing/http-server";

// Issue 9, defect 1: concurrent single enqueues on one server share INSERT statements (the
// coalescer of core's enqueue-jobs.ts). While tenant_B sent payloads with \u0000, 95 of 200 of
// tenant_A's enqueues got a 500: B's row failed the statement they shared. B's bad rows are now
// refused by the contract before any statement (400), and core re-runs a refused group member by
// member (enqueue-isolation.int.test.ts), so A never notices.
const db = useTestDatabase();
let server: TestServer;
let fx: ProducerFixtures;

beforeAll(async () => {
  fx = await seedProducerFixtures(db);
  server = await startTestServer({ db: db.pool, policyCache: new PolicyCache() });
});
afterAll(async () => {
  await server?.close();
});

type Reply = { status: number; body: TrpcReplyBody };
const enqueue = async (key: string, body: unknown): Promise<Reply> => {
  const res = await fetch(`${server.url}/api/trpc/producer.enqueue`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as TrpcReplyBody };
};

describe("a tenant's bad input and another tenant's enqueues, concurrently on one pool", () => {
  it("all 200 of tenant_A's concurrent enqueues succeed while tenant_B's NUL payloads get 400", async () => {
    // Interleaved (one of B's after every fourth of A's), so B's requests arrive among A's.
    const a: Array<Promise<Reply>> = [];
    const b: Array<Promise<Reply>> = [];
    for (let i = 0; i < 200; i++) {
      a.push(enqueue(fx.keyA, { job_type: "fx.email", payload: { message_ref: `s3://mail/${i}` }, idempotency_key: `a-${i}-${randomUUID()}` }));
      if (i % 4 === 0)
        b.push(enqueue(fx.keyB, { job_type: "fx.email", payload: { message_ref: `s3://mail/${i}`, note: `bad\u0000${i}` }, idempotency_key: `b-${i}` }));
    }
    const [ofA, ofB] = await Promise.all([Promise.all(a), Promise.all(b)]);
    expect(ofA.filter((r) => r.status !== 200).map((r) => `${r.status} ${JSON.stringify(r.body).slice(0, 200)}`)).toEqual([]);
    expect(new Set(ofB.map((r) => r.status))).toEqual(new Set([400]));
    for (const r of ofB) expect(r.body.error.message).toMatch(/payload\.note: must not contain the NUL character/);

    const { rows } = await db.pool.query<{ tenant_id: string; n: string }>(`SELECT tenant_id, count(*) AS n FROM jobs GROUP BY tenant_id`);
    expect(rows).toEqual([{ tenant_id: fx.tenantA, n: "200" }]);
  });
});
