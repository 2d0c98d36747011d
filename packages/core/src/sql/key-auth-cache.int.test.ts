import { createPool } from "@porter/db/pool";
import { useTestDatabase } from "@porter/db/testing/test-database";
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { revokeApiKey } from "../control-plane/api-keys";
import { apiKey, controlPlane } from "../testing/control-plane-factory";
import { KeyAuthCache } from "./key-auth-cache";

// The producer API's verified-key cache (issue 15) against real PostgreSQL: revocation takes
// effect within the TTL, the key's rate holds across processes (each its own pool and cache),
// wrong secrets still reach the database and its failure buckets, and concurrent calls of one key
// share a round trip.
const db = useTestDatabase();
let poolB: pg.Pool;

beforeAll(async () => {
  await controlPlane(db.pool, { queues: [{ id: "kc" }], tenants: [{ id: "tenant_A" }] });
  poolB = createPool(db.appConnectionString, { max: 4, applicationName: "key-cache-second-process" });
});
afterAll(async () => {
  await poolB?.end();
});

/** The pool with every `porter_authenticate_key` call counted. */
const counting = (pool: pg.Pool) => {
  const counter = { calls: 0 };
  const proxy = new Proxy(pool, {
    get(target, prop, receiver) {
      if (prop !== "query") return Reflect.get(target, prop, receiver);
      return (...args: unknown[]) => {
        if (String(args[0]).includes("porter_authenticate_key")) counter.calls++;
        return (target.query as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return { pool: proxy, counter };
};

const wrongSecretOf = (key: string) => `${key.slice(0, key.lastIndexOf("_") + 1)}${"x".repeat(43)}`;

describe("KeyAuthCache", () => {
  it("a revoked key is refused once the TTL has passed, in every process (trusted at most that long)", async () => {
    const { key, id } = await apiKey(db.prisma, { tenant_ids: ["tenant_A"], job_types: ["*"], rate_per_second: 100_000 });
    let clock = Date.now();
    const caches = [new KeyAuthCache(db.appPool, { ttlMs: 5000, now: () => clock }), new KeyAuthCache(poolB, { ttlMs: 5000, now: () => clock })];
    // Two calls each: the first learns the key's rate, the second takes a handful of tokens.
    for (const cache of caches) {
      for (let i = 0; i < 2; i++) expect((await cache.authenticate({ presented: key, address: "192.0.2.1" })).outcome).toBe("ok");
    }
    await revokeApiKey(db.prisma, { id, actor: "test" });
    // Within the bound the processes may still spend what they verified (the staleness)…
    clock += 4900;
    for (const cache of caches) expect((await cache.authenticate({ presented: key, address: "192.0.2.1" })).outcome).toBe("ok");
    // …and past it every one of them asks again and refuses the key.
    clock += 200;
    for (const cache of caches) expect((await cache.authenticate({ presented: key, address: "192.0.2.1" })).outcome).toBe("invalid");
    clock += 10;
    for (const cache of caches) expect((await cache.authenticate({ presented: key, address: "192.0.2.1" })).outcome).toBe("invalid");
  });

  it("concurrent calls of one key share round trips: 200 calls, a handful of statements", async () => {
    const { key } = await apiKey(db.prisma, { tenant_ids: ["tenant_A"], job_types: ["*"], rate_per_second: 100_000 });
    const { pool, counter } = counting(db.appPool);
    const cache = new KeyAuthCache(pool);
    const first = await Promise.all(Array.from({ length: 100 }, () => cache.authenticate({ presented: key, address: "192.0.2.2" })));
    const second = await Promise.all(Array.from({ length: 100 }, () => cache.authenticate({ presented: key, address: "192.0.2.2" })));
    expect([...first, ...second].every((r) => r.outcome === "ok")).toBe(true);
    // The first call asks alone (the key's rate is not known yet), its 99 waiters' refresh takes
    // their tokens at once, the second hundred spend tokens already here.
    expect(counter.calls).toBeLessThanOrEqual(4);
  });

  it("the key's rate holds across two processes: no more calls than rate × time + burst", async () => {
    const { key } = await apiKey(db.prisma, { tenant_ids: ["tenant_A"], job_types: ["*"], rate_per_second: 50 });
    const caches = [new KeyAuthCache(db.appPool), new KeyAuthCache(poolB)];
    const started = Date.now();
    let ok = 0;
    let limited = 0;
    // Four callers per process, back to back for 1.5 s.
    await Promise.all(
      caches.flatMap((cache) =>
        Array.from({ length: 4 }, async () => {
          while (Date.now() - started < 1500) {
            const result = await cache.authenticate({ presented: key, address: "192.0.2.3" });
            if (result.outcome === "ok") ok++;
            else if (result.outcome === "rate_limited") {
              limited++;
              expect(result.retryAfterS).toBeGreaterThanOrEqual(1);
              await new Promise((r) => setTimeout(r, 5));
            } else throw new Error(`unexpected ${result.outcome}`);
          }
        }),
      ),
    );
    const seconds = (Date.now() - started) / 1000;
    expect(ok).toBeLessThanOrEqual(Math.ceil(50 * seconds + 50));
    // Both processes were served, and the limit was reached.
    expect(ok).toBeGreaterThanOrEqual(50);
    expect(limited).toBeGreaterThan(0);
  });

  it("a wrong secret never matches a verified key: each goes to the database and is charged", async () => {
    const { key, id } = await apiKey(db.prisma, { tenant_ids: ["tenant_A"], job_types: ["*"] });
    const { pool, counter } = counting(db.appPool);
    const cache = new KeyAuthCache(pool);
    expect((await cache.authenticate({ presented: key, address: "192.0.2.4" })).outcome).toBe("ok");
    const before = counter.calls;
    for (let i = 0; i < 3; i++) expect((await cache.authenticate({ presented: wrongSecretOf(key), address: "192.0.2.4" })).outcome).toBe("invalid");
    expect(counter.calls - before).toBe(3);
    const { rows } = await db.pool.query<{ tokens: number }>(`SELECT tokens FROM rate_buckets WHERE scope = 'api_key_fail' AND key = $1`, [id]);
    // Burst 20, three failures charged (refill in between is a fraction of a token).
    expect(rows[0]!.tokens).toBeLessThan(17.5);
    // The right secret still works from the cache.
    expect((await cache.authenticate({ presented: key, address: "192.0.2.4" })).outcome).toBe("ok");
  });

  it("a key over its rate is refused without a round trip until its next token is due", async () => {
    const { key } = await apiKey(db.prisma, { tenant_ids: ["tenant_A"], job_types: ["*"], rate_per_second: 1 });
    const { pool, counter } = counting(db.appPool);
    const cache = new KeyAuthCache(pool);
    expect((await cache.authenticate({ presented: key, address: "192.0.2.5" })).outcome).toBe("ok");
    expect((await cache.authenticate({ presented: key, address: "192.0.2.5" })).outcome).toBe("rate_limited");
    const calls = counter.calls;
    for (let i = 0; i < 20; i++) expect((await cache.authenticate({ presented: key, address: "192.0.2.5" })).outcome).toBe("rate_limited");
    expect(counter.calls).toBe(calls);
    await new Promise((r) => setTimeout(r, 1100));
    expect((await cache.authenticate({ presented: key, address: "192.0.2.5" })).outcome).toBe("ok");
  });
});
