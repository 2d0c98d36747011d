// Issue 14, point 5: traces end to end. A producer's span → enqueue over the real HTTP API (the
// SDK's producer client injects the traceparent header) → a real worker runtime (in process, so
// its spans reach this file's in-memory exporter) runs the job → the handler's own span: one trace
// with correct parent links. First without any OpenTelemetry SDK registered (nothing breaks and
// ctx.trace carries the stored traceparent), then with one.
import { randomUUID } from "node:crypto";
import { context, type SpanContext, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { BasicTracerProvider, InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { countStored, type ProducerFixtures, seedProducerFixtures } from "@porter/api/testing/fixtures";
import { startTestServer, type TestServer } from "@porter/api/testing/http-server";
import { PolicyCache } from "@porter/core";
import { createPool } from "@porter/db/pool";
import { useTestDatabase } from "@porter/db/testing/test-database";
import { defineHandler, enqueue as enqueueInTransaction, type JobTrace, RetryableError } from "@porter/sdk";
import { createProducerClient, type ProducerClient, ProducerError } from "@porter/sdk/producer";
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHandlerMap } from "../handlers/handler-map";
import { createLogger } from "../logger";
import { attemptsOf, waitForStates } from "../testing/fixtures";
import { PorterWorker } from "./worker";

const testDb = useTestDatabase();
let db: pg.Pool;
let server: TestServer;
let fx: ProducerFixtures;
let client: ProducerClient;
let worker: PorterWorker;

/** What each attempt saw: its ctx.trace and the span active while the handler ran. */
const seen = new Map<string, Array<{ attempt: number; trace: JobTrace; active: SpanContext | undefined }>>();
/** The worker's log lines (JSON). */
const logs: Array<Record<string, unknown>> = [];

const handler = defineHandler({
  type: "fx.email",
  run: async (job, ctx) => {
    const active = trace.getActiveSpan()?.spanContext();
    seen.set(job.job_id, [...(seen.get(job.job_id) ?? []), { attempt: job.attempt, trace: ctx.trace, active }]);
    // A span of the handler's own: nests under the attempt's span (the handler runs in its context).
    trace.getTracer("handler-code").startActiveSpan("send mail", (span) => span.end());
    ctx.logger.info("handler ran");
    if (job.payload.fail_first === true && job.attempt === 1) throw new RetryableError("provider hiccup", { code: "FLAKY" });
    return { ok: true };
  },
});

const randomHex = (bytes: number) =>
  randomUUID()
    .replace(/-/g, "")
    .repeat(2)
    .slice(0, bytes * 2);
const traceparentOf = (traceId: string, spanId: string) => `00-${traceId}-${spanId}-01`;
const job = (overrides: Record<string, unknown> = {}) => ({ job_type: "fx.email", payload: { n: 1 }, idempotency_key: `k-${randomUUID()}`, ...overrides });
const stored = async (jobId: string) =>
  (
    await db.query<{ trace_id: string; traceparent: string | null }>(
      `SELECT trace_id, traceparent FROM jobs WHERE job_id = $1 UNION ALL SELECT trace_id, traceparent FROM finished_jobs WHERE job_id = $1`,
      [jobId],
    )
  ).rows[0];

beforeAll(async () => {
  db = createPool(testDb.appConnectionString, { max: 8 });
  fx = await seedProducerFixtures(testDb);
  await testDb.pool.query(`UPDATE queues SET backoff_base_ms = 20, backoff_cap_ms = 50 WHERE id = 'fx-queue'`);
  server = await startTestServer({ db: testDb.appPool, policyCache: new PolicyCache({ ttlMs: 1000 }) });
  client = createProducerClient({ url: server.url, apiKey: fx.keyA });
  const logger = createLogger({ level: "info", destination: { write: (line: string) => void logs.push(JSON.parse(line) as Record<string, unknown>) } });
  worker = await PorterWorker.start({
    db,
    connectionString: testDb.appConnectionString,
    poolId: "fx-pool",
    logger,
    version: "test-traces",
    hangGraceMs: 300,
    handlers: createHandlerMap([handler]),
  });
});

afterAll(async () => {
  await worker?.drain({ graceMs: 0 });
  await server?.close();
  await db?.end();
  trace.disable();
  context.disable();
});

const handlerLogs = (jobId: string) => logs.filter((l) => l.jobId === jobId && l.msg === "handler ran");

describe("traces without an OpenTelemetry SDK", () => {
  it("stores the job's traceparent and hands it to the handler and its log lines; nothing breaks", async () => {
    const traceId = randomHex(16);
    const spanId = randomHex(8);
    const parent = traceparentOf(traceId, spanId);
    const withParent = await client.enqueue(job({ traceparent: parent }));
    const without = await client.enqueue(job({ trace_id: "order-42" }));
    await waitForStates(db, [withParent.job_id, without.job_id], ["SUCCEEDED"]);

    expect(await stored(withParent.job_id)).toEqual({ trace_id: traceId, traceparent: parent });
    // No SDK, so no context manager either: nothing is "active" — ctx.trace is how handlers learn the trace.
    expect(seen.get(withParent.job_id)).toEqual([
      { attempt: 1, trace: { traceId, spanId, traceparent: parent, parent, isRecording: false }, active: undefined },
    ]);
    expect(handlerLogs(withParent.job_id)).toEqual([expect.objectContaining({ trace_id: traceId, span_id: spanId })]);
    const status = await client.get(withParent.job_id);
    expect(status).toMatchObject({ trace_id: traceId, traceparent: parent });

    // A job without a traceparent: its own trace_id, no span.
    expect(await stored(without.job_id)).toEqual({ trace_id: "order-42", traceparent: null });
    expect(seen.get(without.job_id)?.[0]?.trace).toEqual({ traceId: "order-42", spanId: null, traceparent: null, parent: null, isRecording: false });
    const line = handlerLogs(without.job_id)[0]!;
    expect(line.trace_id).toBe("order-42");
    expect(line).not.toHaveProperty("span_id");
    expect((await client.get(without.job_id)).traceparent).toBeNull();
  });

  it("applies the traceparent header (the SDK's option) to the call's jobs that carry no trace of their own", async () => {
    const header = traceparentOf(randomHex(16), randomHex(8));
    const own = traceparentOf(randomHex(16), randomHex(8));
    const [a, b, c] = await client.enqueueBatch([job(), job({ traceparent: own }), job({ trace_id: "mine" })], { traceparent: header });
    expect(await stored(a!.job_id)).toEqual({ trace_id: header.slice(3, 35), traceparent: header });
    expect(await stored(b!.job_id)).toEqual({ trace_id: own.slice(3, 35), traceparent: own });
    expect(await stored(c!.job_id)).toEqual({ trace_id: "mine", traceparent: null });
    await waitForStates(db, [a!.job_id, b!.job_id, c!.job_id], ["SUCCEEDED"]);
  });

  it("refuses a bad traceparent (field or header) with a 400 naming it, storing nothing", async () => {
    const before = await countStored(testDb.pool);
    const bad = [
      "00-00000000000000000000000000000000-00f067aa0ba902b7-01", // all-zero trace id
      "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", // all-zero span id
      "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", // another version
      "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", // uppercase
      "not a traceparent",
    ];
    for (const traceparent of bad) {
      const error = await client.enqueue(job({ traceparent })).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ProducerError);
      expect((error as ProducerError).status).toBe(400);
      expect(JSON.stringify((error as ProducerError).details)).toContain('"traceparent"');
    }
    // A trace_id that is not the traceparent's trace id.
    const mismatch = (await client
      .enqueue(job({ traceparent: traceparentOf(randomHex(16), randomHex(8)), trace_id: "other" }))
      .catch((e: unknown) => e)) as ProducerError;
    expect(mismatch.status).toBe(400);
    expect(mismatch.message).toContain("trace_id");
    // The header, sent as is (the SDK checks its option before sending anything).
    for (const path of ["producer.enqueue", "producer.enqueueBatch"]) {
      const body = path === "producer.enqueue" ? job() : { jobs: [job()] };
      const res = await fetch(`${server.url}/api/trpc/${path}`, {
        method: "POST",
        headers: { authorization: `Bearer ${fx.keyA}`, "content-type": "application/json", traceparent: bad[0]! },
        body: JSON.stringify(body),
      });
      expect(res.status).toBe(400);
      const reply = (await res.json()) as { error: { message: string; data: { details: { header: string } } } };
      expect(reply.error.message).toMatch(/^traceparent header: must be a W3C traceparent/);
      expect(reply.error.data.details.header).toBe("traceparent");
    }
    const option = await client.enqueue(job(), { traceparent: "nope" }).catch((e: unknown) => e);
    expect((option as ProducerError).status).toBe(400);
    expect(await countStored(testDb.pool)).toEqual(before);
  });
});

describe("traces with an OpenTelemetry SDK (in-memory exporter)", () => {
  const exporter = new InMemorySpanExporter();
  const tracer = () => trace.getTracer("producer-app");
  const byName = (name: string) => exporter.getFinishedSpans().filter((s) => s.name === name);
  const parentOf = (span: ReadableSpan) => span.parentSpanContext?.spanId;
  const attemptSpansOf = (jobId: string) => byName("porter.attempt fx.email").filter((s) => s.attributes["porter.job_id"] === jobId);

  beforeAll(() => {
    // Registered after the worker started: Porter looks its tracer up at each use.
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));
  });

  it("one trace from the producer's span through porter.enqueue and porter.attempt to the handler's span", async () => {
    const { jobId, producer } = await tracer().startActiveSpan("producer: place order", async (span) => {
      const result = await client.enqueue(job());
      span.end();
      return { jobId: result.job_id, producer: span.spanContext() };
    });
    await waitForStates(db, [jobId], ["SUCCEEDED"]);

    // The API server's span: a child of the producer's (the SDK injected its traceparent header).
    const enqueueSpan = byName("porter.enqueue").find((s) => s.spanContext().traceId === producer.traceId)!;
    expect(enqueueSpan).toBeDefined();
    expect(parentOf(enqueueSpan)).toBe(producer.spanId);
    expect(enqueueSpan.attributes).toMatchObject({ "porter.job_count": 1, "porter.job_type": "fx.email", "porter.tenant_id": fx.tenantA });
    // The job is stored under the enqueue span; the attempt is its child.
    const enqueueCtx = enqueueSpan.spanContext();
    const parent = traceparentOf(producer.traceId, enqueueCtx.spanId);
    expect(await stored(jobId)).toEqual({ trace_id: producer.traceId, traceparent: parent });
    const [attempt] = attemptSpansOf(jobId);
    expect(attempt).toBeDefined();
    expect(attempt!.spanContext().traceId).toBe(producer.traceId);
    expect(parentOf(attempt!)).toBe(enqueueCtx.spanId);
    expect(attempt!.attributes).toMatchObject({
      "porter.job_id": jobId,
      "porter.job_type": "fx.email",
      "porter.queue": "fx-queue",
      "porter.tenant_id": fx.tenantA,
      "porter.attempt": 1,
      "porter.outcome": "succeeded",
    });
    expect(attempt!.status.code).toBe(0); // UNSET: a success
    // The handler's own span nests under the attempt's.
    const handlerSpan = byName("send mail").find((s) => s.spanContext().traceId === producer.traceId)!;
    expect(parentOf(handlerSpan)).toBe(attempt!.spanContext().spanId);
    // ctx.trace and the log lines carry the attempt's own span context.
    const attemptCtx = attempt!.spanContext();
    expect(seen.get(jobId)?.[0]?.trace).toEqual({
      traceId: producer.traceId,
      spanId: attemptCtx.spanId,
      traceparent: traceparentOf(producer.traceId, attemptCtx.spanId),
      parent,
      isRecording: true,
    });
    expect(seen.get(jobId)?.[0]?.active?.spanId).toBe(attemptCtx.spanId);
    expect(handlerLogs(jobId)).toEqual([expect.objectContaining({ trace_id: producer.traceId, span_id: attemptCtx.spanId })]);
    // The claim that handed the job out has its span (a root: a batch serves many traces).
    const claims = byName("porter.claim");
    expect(claims.length).toBeGreaterThan(0);
    // Only claims that handed work out are recorded: the worker's idle polls make no span.
    expect(claims.every((s) => Number(s.attributes["porter.claim.count"]) > 0)).toBe(true);
    expect(claims[0]!.parentSpanContext).toBeUndefined();
    expect(claims[0]!.attributes["porter.pool"]).toBe("fx-pool");
    expect((await client.get(jobId)).traceparent).toBe(parent);
  });

  it("keeps the trace across a retry: both attempts are children of the stored traceparent, the failed one an error with its code", async () => {
    const traceId = randomHex(16);
    const spanId = randomHex(8);
    const parent = traceparentOf(traceId, spanId);
    const { job_id: jobId } = await client.enqueue(job({ traceparent: parent, payload: { fail_first: true } }));
    await waitForStates(db, [jobId], ["SUCCEEDED"]);
    expect((await attemptsOf(db, jobId)).map((a) => a.error?.code ?? a.outcome)).toEqual(["FLAKY", "succeeded"]);

    const attempts = attemptSpansOf(jobId).sort((x, y) => Number(x.attributes["porter.attempt"]) - Number(y.attributes["porter.attempt"]));
    expect(attempts.map((s) => [s.spanContext().traceId, parentOf(s), s.attributes["porter.attempt"], s.attributes["porter.outcome"]])).toEqual([
      [traceId, spanId, 1, "retry_wait"],
      [traceId, spanId, 2, "succeeded"],
    ]);
    expect(attempts[0]!.status).toEqual({ code: 2, message: "FLAKY" }); // ERROR
    expect(attempts[0]!.attributes["porter.error.code"]).toBe("FLAKY");
    // The enqueue span links to the job's own traceparent (it is the job's parent, not the span's).
    const enqueueSpan = byName("porter.enqueue").find((s) => s.links.some((l) => l.context.spanId === spanId))!;
    expect(enqueueSpan).toBeDefined();
    expect(await stored(jobId)).toEqual({ trace_id: traceId, traceparent: parent });
    // Each attempt handed the handler its own span and logged under it.
    const views = seen.get(jobId)!;
    expect(views.map((v) => [v.attempt, v.trace.traceId, v.trace.parent])).toEqual([
      [1, traceId, parent],
      [2, traceId, parent],
    ]);
    expect(new Set(views.map((v) => v.trace.spanId))).toEqual(new Set(attempts.map((s) => s.spanContext().spanId)));
    expect(handlerLogs(jobId).map((l) => l.span_id)).toEqual(views.map((v) => v.trace.spanId));
  });

  it("enqueue(client, …) in the producer's transaction: porter.enqueue under the option's traceparent or the active span", async () => {
    const given = traceparentOf(randomHex(16), randomHex(8));
    const conn = await testDb.appPool.connect();
    try {
      await conn.query("BEGIN");
      const [viaOption] = await enqueueInTransaction(conn, [{ ...job(), tenant_id: fx.tenantA }], { traceparent: given });
      const { viaActive, producer } = await tracer().startActiveSpan("producer: in transaction", async (span) => {
        const [r] = await enqueueInTransaction(conn, [{ ...job(), tenant_id: fx.tenantA }]);
        span.end();
        return { viaActive: r!, producer: span.spanContext() };
      });
      // A traceparent of the trace the active context already continues (an instrumented HTTP
      // server's span under that header): the enqueue span nests under the active span.
      const { viaNested, server: serverSpan } = await tracer().startActiveSpan("producer: outer", async (outer) => {
        const header = traceparentOf(outer.spanContext().traceId, outer.spanContext().spanId);
        const nested = await tracer().startActiveSpan("http server", async (inner) => {
          const [r] = await enqueueInTransaction(conn, [{ ...job(), tenant_id: fx.tenantA }], { traceparent: header });
          inner.end();
          return { viaNested: r!, server: inner.spanContext() };
        });
        outer.end();
        return nested;
      });
      await conn.query("COMMIT");
      expect(parentOf(byName("porter.enqueue").find((s) => s.spanContext().traceId === serverSpan.traceId)!)).toBe(serverSpan.spanId);
      expect((await stored(viaNested.job_id))?.trace_id).toBe(serverSpan.traceId);

      const spanOf = (traceId: string) => byName("porter.enqueue").find((s) => s.spanContext().traceId === traceId)!;
      const optionSpan = spanOf(given.slice(3, 35));
      expect(parentOf(optionSpan)).toBe(given.slice(36, 52));
      expect(await stored(viaOption!.job_id)).toEqual({
        trace_id: given.slice(3, 35),
        traceparent: traceparentOf(given.slice(3, 35), optionSpan.spanContext().spanId),
      });
      const activeSpan = spanOf(producer.traceId);
      expect(parentOf(activeSpan)).toBe(producer.spanId);
      expect(await stored(viaActive.job_id)).toEqual({
        trace_id: producer.traceId,
        traceparent: traceparentOf(producer.traceId, activeSpan.spanContext().spanId),
      });
      await waitForStates(db, [viaOption!.job_id, viaActive.job_id, viaNested.job_id], ["SUCCEEDED"]);
      expect(parentOf(attemptSpansOf(viaActive.job_id)[0]!)).toBe(activeSpan.spanContext().spanId);
    } finally {
      conn.release();
    }
  });
});
