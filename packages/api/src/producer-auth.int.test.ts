import { randomUUID } from "node:crypto";
import { createApiKey, KeyAuthCache, PolicyCache } from "@porter/core";
import { createPool } from "@porter/db/pool";
import { useTestDatabase } from "@porter/db/testing/test-database";
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { countStored, seedProducerFixtures } from "./testing/fixtures";
import { startTestServer, type TestServer } from "./testing/http-server";

// Producer key authentication over real HTTP and real PostgreSQL: failed secrets are throttled per
// key id and per client address, each key's calls are rate-limited, and last_used_at is written
// (coalesced) — all in rate_buckets/api_keys, so two API servers on two pools share every limit.
// Each server verifies keys through its own key cache (core's KeyAuthCache, as the producer API's
// process does), here trusting a verified key for 1 s.
const db = useTestDatabase();
const KEY_CACHE_TTL_MS = 1000;
let pool2: pg.Pool;
let serverA: TestServer;
let serverB: TestServer;

beforeAll(async () => {
  await seedProducerFixtures(db);
  pool2 = createPool(db.appConnectionString, { max: 3, applicationName: "producer-auth-second-server" });
  // Two "console processes": own pools, own registries, one database.
  serverA = await startTestServer({ db: db.appPool, policyCache: new PolicyCache(), keyAuthCache: new KeyAuthCache(db.appPool, { ttlMs: KEY_CACHE_TTL_MS }) });
  serverB = await startTestServer({ db: pool2, policyCache: new PolicyCache(), keyAuthCache: new KeyAuthCache(pool2, { ttlMs: KEY_CACHE_TTL_MS }) });
});
afterAll(async () => {
  await serverA?.close();
  await serverB?.close();
  await pool2?.end();
});

const enqueue = async (server: TestServer, key: string, headers: Record<string, string> = {}) => {
  const res = await fetch(`${server.url}/api/trpc/producer.enqueue`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${key}`, ...headers },
    body: JSON.stringify({ job_type: "fx.email", payload: { message_ref: "s3://m/1", version: 1 }, idempotency_key: `k-${randomUUID()}` }),
  });
  return { status: res.status, retryAfter: res.headers.get("retry-after"), body: (await res.json()) as { error: { data: { appCode: string } } } };
};
const newKey = (ratePerSecond?: number) =>
  createApiKey(db.prisma, { tenantIds: ["fx_tenant_a"], jobTypes: ["*"], actor: "test", ...(ratePerSecond ? { ratePerSecond } : {}) });
const wrongSecretOf = (key: string) => `${key.slice(0, key.lastIndexOf("_") + 1)}${"x".repeat(43)}`;

describe("failed API key authentication is throttled", () => {
  it("200 wrong secrets for a real key id: after the burst they get 429 + Retry-After, on both servers", async () => {
    const { key } = await newKey();
    const wrong = wrongSecretOf(key);
    const statuses: number[] = [];
    let retryAfter: string | null = null;
    for (let i = 0; i < 200; i++) {
      // Each attempt from another address: only the key id's bucket can stop them.
      const reply = await enqueue(i % 2 ? serverA : serverB, wrong, { "x-forwarded-for": `198.51.100.${i}` });
      statuses.push(reply.status);
      if (reply.status === 429) retryAfter ??= reply.retryAfter;
    }
    const unauthorized = statuses.filter((s) => s === 401).length;
    // Burst 20, refilling 1/s: a handful more may slip through while the loop runs.
    expect(unauthorized).toBeGreaterThanOrEqual(20);
    expect(unauthorized).toBeLessThan(40);
    expect(statuses.filter((s) => s === 429).length).toBe(200 - unauthorized);
    expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
    // While the key id is locked, even its right secret waits (the lock is checked before the secret).
    expect((await enqueue(serverA, key, { "x-forwarded-for": "203.0.113.9" })).status).toBe(429);
  });

  it("wrong secrets from one address are throttled across key ids; other addresses are unaffected", async () => {
    const keys = await Promise.all(Array.from({ length: 3 }, () => newKey()));
    const attacker = { "x-forwarded-for": "192.0.2.66" };
    const statuses: number[] = [];
    // Until the address is refused (at most 60 calls): burst 20, refilling 1/s, so on a loaded host a
    // handful more may slip through while the loop runs, as above.
    for (let i = 0; i < 60 && statuses.at(-1) !== 429; i++) statuses.push((await enqueue(serverA, wrongSecretOf(keys[i % 3]!.key), attacker)).status);
    expect(statuses.slice(0, 20).every((s) => s === 401)).toBe(true);
    expect(statuses.at(-1)).toBe(429);
    expect(statuses.filter((s) => s === 401).length).toBeLessThan(40);
    // A producer elsewhere with a valid key goes on working.
    expect((await enqueue(serverB, keys[0]!.key, { "x-forwarded-for": "192.0.2.10" })).status).toBe(200);
  });
});

describe("per-key rate limit", () => {
  it("a key's own rate holds across two API servers: 429 + Retry-After past it, nothing stored", async () => {
    const { key } = await newKey(5);
    const before = await countStored(db.pool);
    const replies = await Promise.all(Array.from({ length: 12 }, (_, i) => enqueue(i % 2 ? serverA : serverB, key)));
    const ok = replies.filter((r) => r.status === 200).length;
    // Burst 5 and a refill of 5/s: at most a token or two more while the calls are in flight.
    expect(ok).toBeGreaterThanOrEqual(5);
    expect(ok).toBeLessThanOrEqual(7);
    const limited = replies.filter((r) => r.status === 429);
    expect(limited.length).toBe(12 - ok);
    expect(limited[0]!.retryAfter).toBe("1");
    expect(limited[0]!.body.error.data.appCode).toBe("TOO_MANY_REQUESTS");
    // Refused calls stored nothing: exactly one job per 200.
    expect((await countStored(db.pool)).jobs - before.jobs).toBe(ok);
    // A second later the bucket has refilled.
    await new Promise((r) => setTimeout(r, 1100));
    expect((await enqueue(serverA, key)).status).toBe(200);
  });

  it("a key without its own rate gets the server's default (keyAuthLimits / PORTER_API_KEY_RATE)", async () => {
    const limited = await startTestServer({ db: db.appPool, policyCache: new PolicyCache(), keyAuthLimits: { defaultRatePerSecond: 3 } });
    try {
      const { key } = await newKey();
      const replies = await Promise.all(Array.from({ length: 8 }, () => enqueue(limited, key)));
      const ok = replies.filter((r) => r.status === 200).length;
      expect(ok).toBeGreaterThanOrEqual(3);
      expect(ok).toBeLessThanOrEqual(4);
      expect(replies.filter((r) => r.status === 429).length).toBe(8 - ok);
    } finally {
      await limited.close();
    }
  });
});

describe("api_keys.last_used_at", () => {
  const lastUsed = async (id: string) => (await db.pool.query<{ at: Date | null }>(`SELECT last_used_at AS at FROM api_keys WHERE id = $1`, [id])).rows[0]!.at;

  it("is written on use, at most once a minute per key, and never by a failed attempt", async () => {
    const { key, id } = await newKey();
    expect((await enqueue(serverA, wrongSecretOf(key), { "x-forwarded-for": "198.18.0.1" })).status).toBe(401);
    expect(await lastUsed(id)).toBeNull();
    expect((await enqueue(serverA, key)).status).toBe(200);
    const first = await lastUsed(id);
    expect(first).not.toBeNull();
    expect(Date.now() - first!.getTime()).toBeLessThan(10_000);
    // Many calls within the minute (both servers): the first write stands.
    await Promise.all(Array.from({ length: 10 }, (_, i) => enqueue(i % 2 ? serverA : serverB, key)));
    expect((await lastUsed(id))!.getTime()).toBe(first!.getTime());
    // Once it is older than a minute, the next call that asks the database writes it again: the
    // first after the server's key cache stops trusting its last answer.
    await db.pool.query(`UPDATE api_keys SET last_used_at = now() - interval '61 seconds' WHERE id = $1`, [id]);
    await new Promise((r) => setTimeout(r, KEY_CACHE_TTL_MS + 100));
    expect((await enqueue(serverB, key)).status).toBe(200);
    expect(Date.now() - (await lastUsed(id))!.getTime()).toBeLessThan(10_000);
  });
});
