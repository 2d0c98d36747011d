import { randomUUID } from "node:crypto";
import { createServer } from "node:net";
import { PolicyCache, revokeApiKey } from "@porter/core";
import { createPool } from "@porter/db/pool";
import { useTestDatabase } from "@porter/db/testing/test-database";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { countStored, type ProducerFixtures, seedProducerFixtures } from "../testing/fixtures";
import { startTestServer, type TestServer, type TrpcReplyBody } from "../testing/http-server";

// The producer API over real HTTP, called with plain fetch exactly as a producer without the SDK
// would: POST /api/trpc/producer.enqueue with a JSON body, GET …/producer.get?input=<json>.
const db = useTestDatabase();
let server: TestServer;
let fx: ProducerFixtures;
const MAX_BODY_BYTES = 1024 * 1024;

beforeAll(async () => {
  fx = await seedProducerFixtures(db);
  server = await startTestServer({ db: db.appPool, policyCache: new PolicyCache({ ttlMs: 1000 }), maxBodyBytes: MAX_BODY_BYTES });
});
afterAll(async () => {
  await server?.close();
});

type Reply = { status: number; body: TrpcReplyBody; headers: Headers };

const post = async (path: string, body: unknown, key?: string): Promise<Reply> => {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (key) headers.authorization = `Bearer ${key}`;
  const res = await fetch(`${server.url}/api/trpc/${path}`, {
    method: "POST",
    headers,
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as TrpcReplyBody, headers: res.headers };
};

const get = async (path: string, input: unknown, key?: string): Promise<Reply> => {
  const res = await fetch(`${server.url}/api/trpc/${path}?input=${encodeURIComponent(JSON.stringify(input))}`, {
    headers: key ? { authorization: `Bearer ${key}` } : {},
  });
  return { status: res.status, body: (await res.json()) as TrpcReplyBody, headers: res.headers };
};

const job = (overrides: Record<string, unknown> = {}) => ({
  job_type: "fx.email",
  payload: { message_ref: "s3://mail/1", version: 1 },
  idempotency_key: `k-${randomUUID()}`,
  ...overrides,
});

/** Asserts an error reply: status, tRPC code, and no stack trace or internals in it. */
const expectError = (reply: Reply, status: number, code: string) => {
  expect(reply.status, JSON.stringify(reply.body)).toBe(status);
  expect(reply.body.error.data.code).toBe(code);
  expect(reply.body.error.data.httpStatus).toBe(status);
  expect(reply.body.error.data.stack).toBeUndefined();
  expect(JSON.stringify(reply.body)).not.toMatch(/node_modules|\.ts:\d+|at async/);
};

describe("producer.enqueue", () => {
  it("stores a job and returns its id; the same key and payload returns the same job", async () => {
    const request = job({ payload: { b: 2, a: 1 } });
    const first = await post("producer.enqueue", request, fx.keyA);
    expect(first.status).toBe(200);
    expect(first.body.result.data).toEqual({ job_id: expect.any(String), status: "READY", deduplicated: false });

    const again = await post("producer.enqueue", { ...request, payload: { a: 1, b: 2 } }, fx.keyA);
    expect(again.status).toBe(200);
    expect(again.body.result.data).toEqual({ job_id: first.body.result.data.job_id, status: "READY", deduplicated: true });

    const { rows } = await db.pool.query(`SELECT tenant_id, queue_id FROM jobs WHERE job_id = $1`, [first.body.result.data.job_id]);
    expect(rows).toEqual([{ tenant_id: fx.tenantA, queue_id: "fx-queue" }]);
  });

  it("takes the tenant from the body when the key has several, and refuses to guess", async () => {
    const ok = await post("producer.enqueue", job({ tenant_id: fx.tenantB }), fx.keyAB);
    expect(ok.status).toBe(200);
    const { rows } = await db.pool.query(`SELECT tenant_id FROM jobs WHERE job_id = $1`, [ok.body.result.data.job_id]);
    expect(rows[0].tenant_id).toBe(fx.tenantB);

    const before = await countStored(db.pool);
    const ambiguous = await post("producer.enqueue", job(), fx.keyAB);
    expectError(ambiguous, 400, "BAD_REQUEST");
    expect(ambiguous.body.error.message).toMatch(/tenant_id is required/);
    expect(await countStored(db.pool)).toEqual(before);
  });

  it("is 409 for the same idempotency key with another payload, and stores nothing", async () => {
    const request = job();
    expect((await post("producer.enqueue", request, fx.keyA)).status).toBe(200);
    const before = await countStored(db.pool);
    const conflict = await post("producer.enqueue", { ...request, payload: { message_ref: "s3://mail/other" } }, fx.keyA);
    expectError(conflict, 409, "CONFLICT");
    expect(conflict.body.error.data.appCode).toBe("CONFLICT");
    expect(await countStored(db.pool)).toEqual(before);
  });

  it("is 413 for a payload over 64 KiB, and stores nothing", async () => {
    const before = await countStored(db.pool);
    const big = await post("producer.enqueue", job({ payload: { blob: "x".repeat(70 * 1024) } }), fx.keyA);
    expectError(big, 413, "PAYLOAD_TOO_LARGE");
    expect(big.body.error.message).toMatch(/reference/);
    expect(big.body.error.data.details).toMatchObject({ limit: 64 * 1024 });
    expect(await countStored(db.pool)).toEqual(before);
  });

  it("is 413 for a request body over the limit, refused before parsing", async () => {
    const before = await countStored(db.pool);
    // Not even JSON: a parser would answer 400; the guard answers first.
    const huge = await post("producer.enqueue", `{"job_type": "${"x".repeat(MAX_BODY_BYTES + 10)}`, fx.keyA);
    expectError(huge, 413, "PAYLOAD_TOO_LARGE");
    expect(await countStored(db.pool)).toEqual(before);

    // The same without Content-Length (a streamed body): counted while it arrives.
    const chunk = new TextEncoder().encode("x".repeat(64 * 1024));
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent > MAX_BODY_BYTES * 2) return controller.close();
        sent += chunk.byteLength;
        controller.enqueue(chunk);
      },
    });
    const res = await fetch(`${server.url}/api/trpc/producer.enqueue`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${fx.keyA}` },
      body: stream,
      duplex: "half",
    } as RequestInit);
    expect(res.status).toBe(413);
    expect((await res.json()).error.data.code).toBe("PAYLOAD_TOO_LARGE");
  });

  it.each([
    ["an unknown field", job({ queue_id: "fx-queue" })],
    ["a missing idempotency_key", { job_type: "fx.email", payload: {} }],
    ["priority 500", job({ priority: 500 })],
    ["a payload that is not an object", job({ payload: "s3://x" })],
  ])("is 400 for %s, with the issues and nothing stored", async (_name, body) => {
    const before = await countStored(db.pool);
    const reply = await post("producer.enqueue", body, fx.keyA);
    expectError(reply, 400, "BAD_REQUEST");
    expect(reply.body.error.data.appCode).toBe("BAD_REQUEST");
    expect(reply.body.error.data.details.issues.length).toBeGreaterThan(0);
    expect(await countStored(db.pool)).toEqual(before);
  });

  it("is 400 for malformed JSON and for an unknown job type", async () => {
    expectError(await post("producer.enqueue", "{not json", fx.keyA), 400, "BAD_REQUEST");
    const unknown = await post("producer.enqueue", job({ job_type: "fx.nope" }), fx.keyA);
    expectError(unknown, 400, "BAD_REQUEST");
    expect(unknown.body.error.message).toMatch(/unknown job_type/);
  });

  it("is 401 without a key, with a bad key and with a revoked key", async () => {
    const before = await countStored(db.pool);
    expectError(await post("producer.enqueue", job(), undefined), 401, "UNAUTHORIZED");
    expectError(await post("producer.enqueue", job(), "not-a-key"), 401, "UNAUTHORIZED");
    // Well-formed, real id, wrong secret.
    const forged = fx.keyA.replace(/_[^_]+$/, `_${"A".repeat(43)}`);
    expectError(await post("producer.enqueue", job(), forged), 401, "UNAUTHORIZED");
    // No key and an invalid body: still 401 (auth runs before validation).
    expectError(await post("producer.enqueue", { nonsense: true }, undefined), 401, "UNAUTHORIZED");

    const revocable = await db.pool.query<{ id: string }>(`SELECT id FROM api_keys WHERE id = $1`, [fx.keyEmailOnlyId]);
    expect(revocable.rowCount).toBe(1);
    expect((await post("producer.enqueue", job(), fx.keyEmailOnly)).status).toBe(200);
    await revokeApiKey(db.prisma, { id: fx.keyEmailOnlyId, actor: "test" });
    const after = await countStored(db.pool);
    expectError(await post("producer.enqueue", job(), fx.keyEmailOnly), 401, "UNAUTHORIZED");
    expect(await countStored(db.pool)).toEqual(after);
    expect(after.jobs).toBe(before.jobs + 1);
  });

  it("is 403 for a tenant outside the key's scope", async () => {
    const before = await countStored(db.pool);
    const otherTenant = await post("producer.enqueue", job({ tenant_id: fx.tenantB }), fx.keyA);
    expectError(otherTenant, 403, "FORBIDDEN");
    expect(otherTenant.body.error.data.details).toEqual({ tenant_id: fx.tenantB });
    expect(await countStored(db.pool)).toEqual(before);
  });
});

describe("producer.enqueue with a job-type-scoped key", () => {
  it("is 403 for a job type outside the key's scope", async () => {
    const { key } = await import("@porter/core").then((core) =>
      core.createApiKey(db.prisma, { tenantIds: [fx.tenantA], jobTypes: ["fx.email"], actor: "test" }),
    );
    expect((await post("producer.enqueue", job(), key)).status).toBe(200);
    const before = await countStored(db.pool);
    const outOfScope = await post("producer.enqueue", job({ job_type: "fx.parse" }), key);
    expectError(outOfScope, 403, "FORBIDDEN");
    expect(outOfScope.body.error.data.details).toEqual({ job_type: "fx.parse" });
    expect(await countStored(db.pool)).toEqual(before);
  });
});

describe("producer.get", () => {
  it("returns the job with its status and timeline, by GET with ?input=", async () => {
    const request = job({ priority: 95, trace_id: "trace-1" });
    const { body } = await post("producer.enqueue", request, fx.keyA);
    const jobId = body.result.data.job_id;
    const reply = await get("producer.get", { job_id: jobId }, fx.keyA);
    expect(reply.status).toBe(200);
    const status = reply.body.result.data;
    expect(status).toMatchObject({
      contract: "job.v1",
      job_id: jobId,
      job_type: "fx.email",
      tenant_id: fx.tenantA,
      payload: request.payload,
      priority: 90, // clamped to the queue's ceiling
      idempotency_key: request.idempotency_key,
      status: "READY",
      attempt: 0,
      trace_id: "trace-1",
      result: null,
      error: null,
    });
    expect(status.timeline.map((e: { kind: string }) => e.kind)).toContain("enqueued");
  });

  it("is 404 for an unknown job and for another tenant's job", async () => {
    expectError(await get("producer.get", { job_id: randomUUID() }, fx.keyA), 404, "NOT_FOUND");
    const { body } = await post("producer.enqueue", job(), fx.keyB);
    const theirs = await get("producer.get", { job_id: body.result.data.job_id }, fx.keyA);
    expectError(theirs, 404, "NOT_FOUND");
    expect((await get("producer.get", { job_id: body.result.data.job_id }, fx.keyB)).status).toBe(200);
  });

  it("is 400 for a job_id that is not a uuid and 401 without a key", async () => {
    expectError(await get("producer.get", { job_id: "42" }, fx.keyA), 400, "BAD_REQUEST");
    expectError(await get("producer.get", { job_id: randomUUID() }), 401, "UNAUTHORIZED");
  });
});

describe("producer.enqueueBatch", () => {
  it("stores 1000 jobs and answers in input order", async () => {
    const prefix = randomUUID();
    const jobs = Array.from({ length: 1000 }, (_, i) =>
      job({ idempotency_key: `${prefix}-${i}`, payload: { source_ref: `s3://docs/${i}` }, job_type: i % 2 ? "fx.parse" : "fx.email" }),
    );
    // One duplicate of an earlier job inside the batch is deduplicated, not an error.
    const withDuplicate = [...jobs.slice(0, 999), { ...jobs[0]! }];
    const reply = await post("producer.enqueueBatch", { jobs: withDuplicate }, fx.keyA);
    expect(reply.status, JSON.stringify(reply.body).slice(0, 500)).toBe(200);
    const results = reply.body.result.data.results as Array<{ job_id: string; deduplicated: boolean }>;
    expect(results).toHaveLength(1000);
    expect(results[999]).toEqual({ job_id: results[0]!.job_id, status: "READY", deduplicated: true });

    const { rows } = await db.pool.query<{ job_id: string; idempotency_key: string }>(
      `SELECT job_id::text, idempotency_key FROM jobs WHERE idempotency_key LIKE $1`,
      [`${prefix}-%`],
    );
    expect(rows).toHaveLength(999);
    const keyOf = new Map(rows.map((r) => [r.job_id, r.idempotency_key]));
    for (const [i, result] of results.entries()) expect(keyOf.get(result.job_id)).toBe(`${prefix}-${i === 999 ? 0 : i}`);
  });

  it("stores nothing when one item is invalid, out of scope, too large or conflicting", async () => {
    const existing = job();
    expect((await post("producer.enqueue", existing, fx.keyA)).status).toBe(200);
    const batch = (bad: Record<string, unknown>) => ({
      jobs: Array.from({ length: 50 }, (_, i) => (i === 37 ? bad : job())),
    });
    const before = await countStored(db.pool);

    const invalid = await post("producer.enqueueBatch", batch(job({ priority: 500 })), fx.keyA);
    expectError(invalid, 400, "BAD_REQUEST");
    expect(JSON.stringify(invalid.body.error.data.details.issues[0]?.path)).toBe(JSON.stringify(["jobs", 37, "priority"]));

    const forbidden = await post("producer.enqueueBatch", batch(job({ tenant_id: fx.tenantB })), fx.keyA);
    expectError(forbidden, 403, "FORBIDDEN");
    expect(forbidden.body.error.data.details).toMatchObject({ index: 37 });

    const tooLarge = await post("producer.enqueueBatch", batch(job({ payload: { blob: "y".repeat(65 * 1024) } })), fx.keyA);
    expectError(tooLarge, 413, "PAYLOAD_TOO_LARGE");
    expect(tooLarge.body.error.data.details).toMatchObject({ index: 37 });

    const conflict = await post("producer.enqueueBatch", batch({ ...existing, payload: { other: true } }), fx.keyA);
    expectError(conflict, 409, "CONFLICT");
    expect(conflict.body.error.data.details).toMatchObject({ index: 37 });

    expect(await countStored(db.pool)).toEqual(before);
  });

  it("is 400 for an empty batch and for more than 1000 jobs", async () => {
    expectError(await post("producer.enqueueBatch", { jobs: [] }, fx.keyA), 400, "BAD_REQUEST");
    const before = await countStored(db.pool);
    const tooMany = { jobs: Array.from({ length: 1001 }, () => job({ payload: {} })) };
    expectError(await post("producer.enqueueBatch", tooMany, fx.keyA), 400, "BAD_REQUEST");
    expect(await countStored(db.pool)).toEqual(before);
  });
});

describe("producer.cancel", () => {
  it("cancels a queued job at once", async () => {
    const { body } = await post("producer.enqueue", job(), fx.keyA);
    const jobId = body.result.data.job_id;
    const reply = await post("producer.cancel", { job_id: jobId, reason: "no longer needed" }, fx.keyA);
    expect(reply.status).toBe(200);
    expect(reply.body.result.data).toEqual({ job_id: jobId, status: "CANCELLED" });

    const status = (await get("producer.get", { job_id: jobId }, fx.keyA)).body.result.data;
    expect(status.status).toBe("CANCELLED");
    const cancelled = status.timeline.find((e: { kind: string }) => e.kind === "cancelled");
    expect(cancelled).toMatchObject({ actor: expect.stringMatching(/^key:/) });

    // Again: a no-op that reports the same state.
    expect((await post("producer.cancel", { job_id: jobId }, fx.keyA)).body.result.data.status).toBe("CANCELLED");
  });

  it("is 404 for another tenant's job, which stays queued", async () => {
    const { body } = await post("producer.enqueue", job(), fx.keyB);
    const jobId = body.result.data.job_id;
    expectError(await post("producer.cancel", { job_id: jobId }, fx.keyA), 404, "NOT_FOUND");
    expect((await get("producer.get", { job_id: jobId }, fx.keyB)).body.result.data.status).toBe("READY");
  });
});

describe("system", () => {
  it("reports health to anyone; counts only to a signed-in console user (401, even with a producer key)", async () => {
    const health = await get("system.health", undefined);
    expect(health.status).toBe(200);
    expect(health.body.result.data).toEqual({ status: "ok", database: "up" });
    expectError(await get("system.counts", undefined), 401, "UNAUTHORIZED");
    expectError(await get("system.counts", undefined, fx.keyA), 401, "UNAUTHORIZED");
  });

  it("is 404 for an unknown procedure and 405 for a query sent as a mutation", async () => {
    expect((await post("producer.nope", {}, fx.keyA)).status).toBe(404);
    expect((await post("producer.get", { job_id: randomUUID() }, fx.keyA)).status).toBe(405);
  });
});

describe("with the database down", () => {
  it("answers 503 with Retry-After and no internals, for producers and health", async () => {
    // A port nobody listens on: bind one, then free it.
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
    const { port } = probe.address() as { port: number };
    await new Promise((resolve) => probe.close(resolve));
    const deadPool = createPool(`postgres://porter:secret-password@127.0.0.1:${port}/nowhere`, { connectionTimeoutMillis: 2000 });
    const down = await startTestServer({ db: deadPool, policyCache: new PolicyCache() });
    try {
      const res = await fetch(`${down.url}/api/trpc/producer.enqueue`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${fx.keyA}` },
        body: JSON.stringify(job()),
      });
      const body = await res.json();
      expect(res.status).toBe(503);
      expect(res.headers.get("retry-after")).toBe("1");
      expect(body.error.data).toMatchObject({ code: "SERVICE_UNAVAILABLE", httpStatus: 503, retryAfterS: 1 });
      expect(JSON.stringify(body)).not.toMatch(new RegExp(`${port}|secret-password|ECONNREFUSED|nowhere`));

      const health = await fetch(`${down.url}/api/trpc/system.health`);
      expect(health.status).toBe(503);
    } finally {
      await down.close();
      await deadPool.end();
    }
  });
});
