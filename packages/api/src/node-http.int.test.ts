import { randomUUID } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { KeyAuthCache, PolicyCache } from "@porter/core";
import { useTestDatabase } from "@porter/db/testing/test-database";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TrpcHttpDeps } from "./http";
import { createNodeTrpcHandler } from "./node-http";
import { countStored, type ProducerFixtures, seedProducerFixtures } from "./testing/fixtures";

// The producer API's node:http server (issue 15): producer calls in their plain form take the
// direct path (tRPC's procedure call and error shape, no fetch Request/Response); everything else
// goes through tRPC's fetch adapter. Both answer every call with the same status, headers and
// body — compared here call by call against a server that sends everything through the fetch
// adapter. And concurrent single enqueues (grouped into shared statements by core) each get their
// own answer: one tenant's bad calls never fail another's.
const db = useTestDatabase();
let fx: ProducerFixtures;
const servers: Server[] = [];
let direct: string;
let viaFetch: string;
const MAX_BODY_BYTES = 256 * 1024;

const listen = async (isDirect: boolean, deps: TrpcHttpDeps): Promise<string> => {
  const handler = createNodeTrpcHandler(deps, { isDirect });
  const server = createServer((req, res) => void handler(req, res));
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
};

beforeAll(async () => {
  fx = await seedProducerFixtures(db);
  const deps = (): TrpcHttpDeps => ({
    db: db.appPool,
    prisma: db.prisma,
    policyCache: new PolicyCache({ ttlMs: 1000 }),
    keyAuthCache: new KeyAuthCache(db.appPool),
    maxBodyBytes: MAX_BODY_BYTES,
  });
  direct = await listen(true, deps());
  viaFetch = await listen(false, deps());
});
afterAll(async () => {
  for (const server of servers) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

type Call = { method?: string; path: string; body?: string; headers?: Record<string, string> };
type Reply = { status: number; headers: Record<string, string | null>; text: string };

const send = async (origin: string, call: Call): Promise<Reply> => {
  const res = await fetch(`${origin}/api/trpc/${call.path}`, { method: call.method ?? "POST", headers: call.headers, body: call.body });
  const text = await res.text();
  const headers: Record<string, string | null> = {};
  for (const name of ["content-type", "retry-after", "vary", "connection"]) headers[name] = res.headers.get(name);
  return { status: res.status, headers, text };
};

const json = { "content-type": "application/json" };
const bearer = (key: string) => ({ ...json, authorization: `Bearer ${key}` });
const job = (overrides: Record<string, unknown> = {}) => ({
  job_type: "fx.email",
  payload: { message_ref: "s3://mail/1", version: 1 },
  idempotency_key: `k-${randomUUID()}`,
  ...overrides,
});

describe("the direct producer path answers as tRPC's fetch adapter does", () => {
  const cases: Array<[string, () => Call]> = [
    ["401 without a key", () => ({ path: "producer.enqueue", headers: json, body: JSON.stringify(job()) })],
    ["401 with an unknown key", () => ({ path: "producer.enqueue", headers: bearer(`pk_aaaaaaaaaaaa_${"x".repeat(43)}`), body: JSON.stringify(job()) })],
    ["400 for a body that is not JSON", () => ({ path: "producer.enqueue", headers: bearer(fx.keyA), body: "{not json" })],
    ["400 for an empty body", () => ({ path: "producer.enqueue", headers: bearer(fx.keyA), body: "" })],
    ["400 for an input the schema refuses", () => ({ path: "producer.enqueue", headers: bearer(fx.keyA), body: JSON.stringify(job({ priority: 500 })) })],
    ["400 for a NUL in the payload", () => ({ path: "producer.enqueue", headers: bearer(fx.keyA), body: JSON.stringify(job({ payload: { a: "x\u0000" } })) })],
    [
      "400 for a bad traceparent header",
      () => ({ path: "producer.enqueue", headers: { ...bearer(fx.keyA), traceparent: "nope" }, body: JSON.stringify(job()) }),
    ],
    [
      "403 for a job type outside the key's scope",
      () => ({ path: "producer.enqueue", headers: bearer(fx.keyEmailOnly), body: JSON.stringify(job({ job_type: "fx.parse" })) }),
    ],
    ["403 for another tenant", () => ({ path: "producer.enqueue", headers: bearer(fx.keyA), body: JSON.stringify(job({ tenant_id: fx.tenantB })) })],
    [
      "400 in a batch, naming the item",
      () => ({ path: "producer.enqueueBatch", headers: bearer(fx.keyA), body: JSON.stringify({ jobs: [job(), job({ job_type: "nope" })] }) }),
    ],
    [
      "404 for an unknown job (GET)",
      () => ({ method: "GET", path: `producer.get?input=${encodeURIComponent(JSON.stringify({ job_id: randomUUID() }))}`, headers: bearer(fx.keyA) }),
    ],
    ["400 for a GET without input", () => ({ method: "GET", path: "producer.get", headers: bearer(fx.keyA) })],
    ["404 for cancelling an unknown job", () => ({ path: "producer.cancel", headers: bearer(fx.keyA), body: JSON.stringify({ job_id: randomUUID() }) })],
    [
      "413 for a payload over 64 KiB",
      () => ({ path: "producer.enqueue", headers: bearer(fx.keyA), body: JSON.stringify(job({ payload: { blob: "x".repeat(70_000) } })) }),
    ],
    [
      "413 for a body over the server's limit",
      () => ({ path: "producer.enqueueBatch", headers: bearer(fx.keyA), body: JSON.stringify({ jobs: [job({ payload: { blob: "x".repeat(300_000) } })] }) }),
    ],
    ["405 for a GET of a mutation (fetch path on both)", () => ({ method: "GET", path: "producer.enqueue", headers: bearer(fx.keyA) })],
    [
      "415 for another content type (fetch path on both)",
      () => ({ path: "producer.enqueue", headers: { "content-type": "text/plain", authorization: `Bearer ${fx.keyA}` }, body: "{}" }),
    ],
    ["401 for a console procedure without a session (fetch path on both)", () => ({ method: "GET", path: "me.get", headers: {} })],
  ];
  for (const [name, make] of cases) {
    it(name, async () => {
      const call = make();
      const [a, b] = [await send(direct, call), await send(viaFetch, call)];
      expect(a.status).toBeGreaterThanOrEqual(400);
      expect(a).toEqual(b);
    });
  }

  it("409 for the same idempotency key with another payload", async () => {
    const key = `k-${randomUUID()}`;
    expect((await send(direct, { path: "producer.enqueue", headers: bearer(fx.keyA), body: JSON.stringify(job({ idempotency_key: key })) })).status).toBe(200);
    const call = { path: "producer.enqueue", headers: bearer(fx.keyA), body: JSON.stringify(job({ idempotency_key: key, payload: { other: 1 } })) };
    const [a, b] = [await send(direct, call), await send(viaFetch, call)];
    expect(a.status).toBe(409);
    expect(a).toEqual(b);
  });

  it("429 + Retry-After for an address past its failed keys (same reply on both paths)", async () => {
    const wrong = `pk_bbbbbbbbbbbb_${"y".repeat(43)}`;
    const call = (origin: string) => send(origin, { path: "producer.enqueue", headers: { ...bearer(wrong), "x-forwarded-for": "198.51.100.77" }, body: "{}" });
    for (let i = 0; i < 20; i++) expect((await call(i % 2 ? direct : viaFetch)).status).toBe(401);
    // The address's bucket refills one failure a second: on a loaded host the twenty calls can take
    // longer than that, so a call or two more may still be a 401 before the 429 (the throttle's
    // exact count is producer-auth.int.test.ts's). What this test holds: both paths refuse alike.
    let pair = [await call(direct), await call(viaFetch)];
    for (let i = 0; i < 10 && !(pair[0]!.status === 429 && pair[1]!.status === 429); i++) pair = [await call(direct), await call(viaFetch)];
    const [a, b] = pair as [(typeof pair)[0], (typeof pair)[0]];
    expect(a.status).toBe(429);
    expect(Number(a.headers["retry-after"])).toBeGreaterThanOrEqual(1);
    expect(a).toEqual(b);
  });

  it("200: the same job through either path (the second a deduplicated repeat), and the same reply for get", async () => {
    const body = JSON.stringify(job());
    const first = await send(direct, { path: "producer.enqueue", headers: bearer(fx.keyA), body });
    const again = await send(viaFetch, { path: "producer.enqueue", headers: bearer(fx.keyA), body });
    expect(first.status).toBe(200);
    expect(first.headers).toEqual(again.headers);
    const [one, two] = [JSON.parse(first.text), JSON.parse(again.text)];
    expect(one.result.data).toEqual({ ...two.result.data, deduplicated: false });
    expect(two.result.data.deduplicated).toBe(true);
    const get = {
      method: "GET",
      path: `producer.get?input=${encodeURIComponent(JSON.stringify({ job_id: one.result.data.job_id }))}`,
      headers: bearer(fx.keyA),
    };
    const [a, b] = [await send(direct, get), await send(viaFetch, get)];
    expect(a.status).toBe(200);
    expect(a).toEqual(b);
  });

  it("batch calls (?batch=1) are served too", async () => {
    const res = await send(direct, { path: "producer.enqueue?batch=1", headers: bearer(fx.keyA), body: JSON.stringify({ 0: job() }) });
    expect(res.status).toBe(200);
    expect(JSON.parse(res.text)[0].result.data.status).toBe("READY");
  });
});

// Batch calls of producer mutations (what the SDK sends for single enqueues made together) take
// the direct path too: the same status (207 for mixed outcomes), headers and items as the fetch
// adapter's; any other batch goes through the fetch adapter on both.
describe("the direct path answers producer batch calls as tRPC's fetch adapter does", () => {
  const batchOf = (n: number) => `${Array(n).fill("producer.enqueue").join(",")}?batch=1`;
  const items = (...inputs: unknown[]) => JSON.stringify(Object.fromEntries(inputs.map((input, i) => [i, input])));
  const cases: Array<[string, () => Call]> = [
    ["401 for every call without a key", () => ({ path: batchOf(2), headers: json, body: items(job(), job()) })],
    [
      "207: 400 (schema), 403 (tenant), 400 (NUL), 400 (missing input), 413 (payload) in one batch",
      () => ({
        path: batchOf(5),
        headers: bearer(fx.keyA),
        body: JSON.stringify({
          0: job({ priority: 500 }),
          1: job({ tenant_id: fx.tenantB }),
          2: job({ payload: { a: "x\u0000" } }),
          4: job({ payload: { blob: "x".repeat(70_000) } }),
        }),
      }),
    ],
    [
      "400 for a bad traceparent header, every call",
      () => ({ path: batchOf(2), headers: { ...bearer(fx.keyA), traceparent: "nope" }, body: items(job(), job()) }),
    ],
    ["a body that is not JSON (fetch path on both)", () => ({ path: batchOf(2), headers: bearer(fx.keyA), body: "{not json" })],
    ["a body that is not an object (fetch path on both)", () => ({ path: batchOf(2), headers: bearer(fx.keyA), body: "[1,2]" })],
    ["more calls than maxBatchSize (fetch path on both)", () => ({ path: batchOf(51), headers: bearer(fx.keyA), body: "{}" })],
    [
      "a batch with a query in it (fetch path on both)",
      () => ({ path: "producer.enqueue,producer.get?batch=1", headers: bearer(fx.keyA), body: items(job(), { job_id: randomUUID() }) }),
    ],
    [
      "413 for a batch body over the server's limit",
      () => ({
        path: batchOf(2),
        headers: bearer(fx.keyA),
        body: items(job({ payload: { blob: "x".repeat(200_000) } }), job({ payload: { blob: "x".repeat(200_000) } })),
      }),
    ],
  ];
  for (const [name, make] of cases) {
    it(name, async () => {
      const call = make();
      const [a, b] = [await send(direct, call), await send(viaFetch, call)];
      expect(a.status === 207 || a.status >= 400, a.text).toBe(true);
      expect(a).toEqual(b);
    });
  }

  it("207 with stored jobs and refusals: each call its own item, the refusals byte for byte", async () => {
    const taken = `k-${randomUUID()}`;
    expect((await send(direct, { path: "producer.enqueue", headers: bearer(fx.keyA), body: JSON.stringify(job({ idempotency_key: taken })) })).status).toBe(
      200,
    );
    const before = await countStored(db.pool);
    const call = () => ({
      path: batchOf(3),
      headers: bearer(fx.keyA),
      body: items(job(), job({ idempotency_key: taken, payload: { other: 1 } }), job({ job_type: "fx.unknown" })),
    });
    const [a, b] = [await send(direct, call()), await send(viaFetch, call())];
    expect(a.status).toBe(207);
    expect(a.headers).toEqual(b.headers);
    const [one, two] = [JSON.parse(a.text), JSON.parse(b.text)];
    expect(one[0].result.data).toMatchObject({ status: "READY", deduplicated: false });
    expect(two[0].result.data).toMatchObject({ status: "READY", deduplicated: false });
    expect(one.slice(1)).toEqual(two.slice(1));
    expect(one[1].error.data.httpStatus).toBe(409);
    expect((await countStored(db.pool)).jobs - before.jobs).toBe(2);
  });
});

describe("concurrent single enqueues over HTTP, grouped into shared statements", () => {
  it("each call gets its own answer: tenant B's bad calls never fail tenant A's", async () => {
    const before = await countStored(db.pool);
    const taken = `k-${randomUUID()}`;
    expect((await send(direct, { path: "producer.enqueue", headers: bearer(fx.keyB), body: JSON.stringify(job({ idempotency_key: taken })) })).status).toBe(
      200,
    );
    const calls: Array<{ expect: number; call: Call }> = [];
    for (let i = 0; i < 40; i++) {
      calls.push({ expect: 200, call: { path: "producer.enqueue", headers: bearer(fx.keyA), body: JSON.stringify(job({ payload: { n: i } })) } });
      const bad: Call[] = [
        // 409: tenant B's key already stored with another payload.
        { path: "producer.enqueue", headers: bearer(fx.keyB), body: JSON.stringify(job({ idempotency_key: taken, payload: { n: i } })) },
        // 400: a NUL in a payload (PostgreSQL's jsonb would refuse the whole shared statement).
        { path: "producer.enqueue", headers: bearer(fx.keyB), body: JSON.stringify(job({ payload: { s: `\u0000${i}` } })) },
        // 400: an unknown job type.
        { path: "producer.enqueue", headers: bearer(fx.keyB), body: JSON.stringify(job({ job_type: "fx.unknown" })) },
      ];
      calls.push({ expect: [409, 400, 400][i % 3]!, call: bad[i % 3]! });
    }
    const replies = await Promise.all(calls.map(({ call }) => send(direct, call)));
    for (const [i, reply] of replies.entries()) expect(reply.status, reply.text).toBe(calls[i]!.expect);
    const ids = replies.filter((_, i) => calls[i]!.expect === 200).map((r) => JSON.parse(r.text).result.data.job_id as string);
    expect(new Set(ids).size).toBe(40);
    // Exactly tenant A's 40 jobs (and the one stored first) were stored.
    expect((await countStored(db.pool)).jobs - before.jobs).toBe(41);
    const { rows } = await db.pool.query<{ n: string }>(`SELECT count(*) AS n FROM jobs WHERE job_id = ANY($1::uuid[]) AND tenant_id = $2`, [ids, fx.tenantA]);
    expect(Number(rows[0]!.n)).toBe(40);
  });
});
