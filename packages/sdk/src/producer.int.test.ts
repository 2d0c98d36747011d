import { randomUUID } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { countStored, type ProducerFixtures, seedProducerFixtures } from "@porter/api/testing/fixtures";
import { startTestServer, type TestServer } from "@porter/api/testing/http-server";
import type { TEnqueueRequest, TEnqueueResult } from "@porter/contracts";
import { PolicyCache } from "@porter/core";
import { useTestDatabase } from "@porter/db/testing/test-database";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createProducerClient, type ProducerClient, ProducerError } from "./producer";

const db = useTestDatabase();
let server: TestServer;
let fx: ProducerFixtures;
let client: ProducerClient;

beforeAll(async () => {
  fx = await seedProducerFixtures(db);
  server = await startTestServer({ db: db.appPool, policyCache: new PolicyCache({ ttlMs: 1000 }) });
  client = createProducerClient({ url: server.url, apiKey: fx.keyA });
});
afterAll(async () => {
  await server?.close();
});

const job = (overrides: Record<string, unknown> = {}) => ({
  job_type: "fx.email",
  payload: { message_ref: "s3://mail/1" },
  idempotency_key: `k-${randomUUID()}`,
  ...overrides,
});

const failure = async (call: Promise<unknown>): Promise<ProducerError> => {
  try {
    await call;
  } catch (error) {
    expect(error).toBeInstanceOf(ProducerError);
    return error as ProducerError;
  }
  throw new Error("expected the call to fail");
};

describe("createProducerClient", () => {
  it("enqueues (idempotently), reads and cancels a job", async () => {
    const request = job();
    const first = await client.enqueue(request);
    expect(first).toEqual({ job_id: expect.any(String), status: "READY", deduplicated: false });
    expect(await client.enqueue(request)).toEqual({ ...first, deduplicated: true });

    const status = await client.get(first.job_id);
    expect(status).toMatchObject({ job_id: first.job_id, tenant_id: fx.tenantA, status: "READY", result: null });

    expect(await client.cancel(first.job_id, "changed my mind")).toEqual({ job_id: first.job_id, status: "CANCELLED" });
    expect((await client.get(first.job_id)).status).toBe("CANCELLED");
  });

  it("enqueues a batch, results in input order", async () => {
    const jobs = Array.from({ length: 25 }, (_, i) => job({ payload: { n: i } }));
    const results = await client.enqueueBatch(jobs);
    expect(results).toHaveLength(25);
    for (const [i, result] of results.entries()) {
      expect((await client.get(result.job_id)).payload).toEqual({ n: i });
    }
  });

  it("accepts the endpoint URL as well as the origin", async () => {
    const viaEndpoint = createProducerClient({ url: `${server.url}/api/trpc/`, apiKey: fx.keyA });
    expect((await viaEndpoint.enqueue(job())).status).toBe("READY");
  });

  it("throws ProducerError with the HTTP status and the API's code", async () => {
    const before = await countStored(db.pool);
    const conflictKey = job();
    await client.enqueue(conflictKey);
    const conflict = await failure(client.enqueue({ ...conflictKey, payload: { other: 1 } }));
    expect(conflict).toMatchObject({ status: 409, code: "CONFLICT", isRetryable: false });
    expect(conflict.details).toMatchObject({ idempotency_key: conflictKey.idempotency_key });

    expect(await failure(client.enqueue(job({ priority: 500 })))).toMatchObject({ status: 400, code: "BAD_REQUEST" });
    expect(await failure(client.enqueue(job({ tenant_id: fx.tenantB })))).toMatchObject({ status: 403, code: "FORBIDDEN" });
    expect(await failure(client.enqueue(job({ payload: { blob: "z".repeat(65 * 1024) } })))).toMatchObject({
      status: 413,
      code: "PAYLOAD_TOO_LARGE",
    });
    expect(await failure(client.get(randomUUID()))).toMatchObject({ status: 404, code: "NOT_FOUND" });
    const badKey = createProducerClient({ url: server.url, apiKey: "pk_nothing" });
    expect(await failure(badKey.enqueue(job()))).toMatchObject({ status: 401, code: "UNAUTHORIZED" });
    expect(await countStored(db.pool)).toEqual({ jobs: before.jobs + 1, keys: before.keys + 1 });
  });

  it("keeps the status and Retry-After of a non-JSON error, and reports no response as status 0", async () => {
    const proxy = createServer((_req, res) => {
      res.writeHead(503, { "content-type": "text/html", "retry-after": "7" });
      res.end("<html>upstream unavailable</html>");
    });
    await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
    const { port } = proxy.address() as AddressInfo;
    try {
      const behindProxy = createProducerClient({ url: `http://127.0.0.1:${port}`, apiKey: fx.keyA });
      const error = await failure(behindProxy.enqueue(job()));
      expect(error).toMatchObject({ status: 503, code: "HTTP_503", retryAfterS: 7, isRetryable: true });
      // Calls joined in one request: the one error answers each of them.
      const joined = await Promise.all([failure(behindProxy.enqueue(job())), failure(behindProxy.enqueue(job()))]);
      for (const e of joined) expect(e).toMatchObject({ status: 503, code: "HTTP_503", retryAfterS: 7, isRetryable: true });
    } finally {
      await new Promise((resolve) => proxy.close(resolve));
    }
    const nowhere = createProducerClient({ url: `http://127.0.0.1:${port}`, apiKey: fx.keyA });
    expect(await failure(nowhere.get(randomUUID()))).toMatchObject({ status: 0, code: "NETWORK_ERROR", isRetryable: true });
  });

  it("answers the same over its own keep-alive connections as over fetch, on fewer connections than calls", async () => {
    const viaFetch = createProducerClient({ url: server.url, apiKey: fx.keyA, fetch: globalThis.fetch });
    const fields = (e: ProducerError) => ({ message: e.message, status: e.status, code: e.code, retryAfterS: e.retryAfterS, details: e.details });
    const conflictKey = job();
    const missing = randomUUID();
    const first = await client.enqueue(conflictKey);
    expect(await viaFetch.enqueue(conflictKey)).toEqual({ ...first, deduplicated: true });
    expect(await viaFetch.get(first.job_id)).toEqual(await client.get(first.job_id));
    const failures: Array<(c: ProducerClient) => Promise<unknown>> = [
      (c) => c.enqueue({ ...conflictKey, payload: { other: 1 } }),
      (c) => c.enqueue(job({ priority: 500 })),
      (c) => c.enqueue(job({ tenant_id: fx.tenantB })),
      (c) => c.enqueueBatch([job(), job({ job_type: "fx.unknown" })]),
      (c) => c.get(missing),
      (c) => c.cancel(missing, "nothing there"),
    ];
    for (const fail of failures) {
      const [own, fetched] = [await failure(fail(client)), await failure(fail(viaFetch))];
      expect(fields(own)).toEqual(fields(fetched));
      expect(own.status).toBeGreaterThanOrEqual(400);
    }

    // 40 calls, 8 at a time: the sockets are reused (fetch's dispatcher kept them alive too).
    const sockets = new Set<unknown>();
    const counter = createServer((req, res) => {
      sockets.add(req.socket);
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ result: { data: { job_id: randomUUID(), status: "READY", deduplicated: false } } }));
    });
    await new Promise<void>((resolve) => counter.listen(0, "127.0.0.1", resolve));
    try {
      const counted = createProducerClient({ url: `http://127.0.0.1:${(counter.address() as AddressInfo).port}`, apiKey: fx.keyA, joinEnqueues: false });
      for (let round = 0; round < 5; round++) await Promise.all(Array.from({ length: 8 }, () => counted.enqueue(job())));
      expect(sockets.size).toBeLessThanOrEqual(8);
    } finally {
      counter.closeAllConnections();
      await new Promise((resolve) => counter.close(resolve));
    }
  });

  it("sends joined calls again one by one when their request is over the server's body limit", async () => {
    const small = await startTestServer({ db: db.appPool, policyCache: new PolicyCache({ ttlMs: 1000 }), maxBodyBytes: 1024 });
    try {
      const sent: string[] = [];
      const counting: typeof fetch = (input, init) => {
        sent.push(String(input));
        return fetch(input, init);
      };
      const joined = createProducerClient({ url: small.url, apiKey: fx.keyA, fetch: counting });
      // About 700 bytes each: under the limit alone, over it together.
      const calls = [job({ payload: { blob: "a".repeat(600) } }), job({ payload: { blob: "b".repeat(600) } })];
      const before = await countStored(db.pool);
      const results = await Promise.all(calls.map((c) => joined.enqueue(c)));
      for (const result of results) expect(result).toMatchObject({ status: "READY", deduplicated: false });
      expect((await countStored(db.pool)).jobs).toBe(before.jobs + 2);
      expect(sent).toEqual([
        `${small.url}/api/trpc/producer.enqueue,producer.enqueue?batch=1`,
        `${small.url}/api/trpc/producer.enqueue`,
        `${small.url}/api/trpc/producer.enqueue`,
      ]);
      // A call over the limit alone still gets its own 413.
      expect(await failure(joined.enqueue(job({ payload: { blob: "c".repeat(2000) } })))).toMatchObject({ status: 413 });
    } finally {
      await small.close();
    }
  });

  it("joins concurrent enqueues into one tRPC batch request, each call answered as it is alone", async () => {
    const sent: string[] = [];
    const counting: typeof fetch = (input, init) => {
      sent.push(String(input));
      return fetch(input, init);
    };
    const joined = createProducerClient({ url: server.url, apiKey: fx.keyA, fetch: counting });
    const alone = createProducerClient({ url: server.url, apiKey: fx.keyA, joinEnqueues: false });
    const fields = (e: ProducerError) => ({ message: e.message, status: e.status, code: e.code, retryAfterS: e.retryAfterS, details: e.details });
    const conflictKey = job();
    await alone.enqueue(conflictKey);
    const failing: TEnqueueRequest[] = [
      { ...conflictKey, payload: { other: 1 } },
      job({ priority: 500 }),
      job({ tenant_id: fx.tenantB }),
      job({ job_type: "fx.unknown" }),
      job({ payload: { blob: "z".repeat(65 * 1024) } }),
      job({ payload: { s: "\u0000" } }),
    ];
    const good = [job(), job({ payload: { n: 2 } })];
    const before = await countStored(db.pool);
    const outcomes = await Promise.allSettled([...good, ...failing].map((r) => joined.enqueue(r)));
    // One request for seven calls, in tRPC's batch format; the call over 64 KB on its own.
    expect(sent.sort()).toEqual([`${server.url}/api/trpc/producer.enqueue`, `${server.url}/api/trpc/${Array(7).fill("producer.enqueue").join(",")}?batch=1`]);
    for (const [i, outcome] of outcomes.slice(0, 2).entries()) {
      expect(outcome.status).toBe("fulfilled");
      const result = (outcome as PromiseFulfilledResult<TEnqueueResult>).value;
      expect(result).toMatchObject({ status: "READY", deduplicated: false });
      expect((await alone.get(result.job_id)).payload).toEqual(good[i]!.payload);
    }
    // Only the good ones were stored; each failure is the one the call gets on its own.
    expect((await countStored(db.pool)).jobs).toBe(before.jobs + 2);
    for (const [i, outcome] of outcomes.slice(2).entries()) {
      expect(outcome.status).toBe("rejected");
      const own = await failure(alone.enqueue(failing[i]!));
      expect(fields((outcome as PromiseRejectedResult).reason as ProducerError)).toEqual(fields(own));
    }
    // The same call joined again is deduplicated, as it is alone.
    const [again] = await Promise.all([joined.enqueue(good[0]!), joined.enqueue(job())]);
    expect(again).toEqual({ ...(outcomes[0] as PromiseFulfilledResult<TEnqueueResult>).value, deduplicated: true });

    // Another traceparent goes in a request of its own; a lone call as a plain request.
    sent.length = 0;
    const traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    await Promise.all([joined.enqueue(job()), joined.enqueue(job()), joined.enqueue(job(), { traceparent })]);
    expect(sent.sort()).toEqual([`${server.url}/api/trpc/producer.enqueue`, `${server.url}/api/trpc/producer.enqueue,producer.enqueue?batch=1`]);
  });
});
