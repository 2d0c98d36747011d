import { randomUUID } from "node:crypto";
import {
  type ClaimedJob,
  claimJobs,
  completeJobs,
  createStatusLink,
  enqueueJobs,
  extendLeases,
  failJobs,
  pruneStream,
  revokeStatusLink,
  STREAM_RETENTION_MS,
  StreamHub,
  StreamNotifier,
} from "@porter/core";
import { useTestDatabase } from "@porter/db/testing/test-database";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEventsServer } from "../testing/events-server";
import { type ProducerFixtures, seedProducerFixtures } from "../testing/fixtures";
import { openSse, type SseMessage } from "../testing/sse-client";
import { StreamLimiter } from "./sse";

// The live status stream over real HTTP and real PostgreSQL: events in order, resume with
// Last-Event-ID without loss, one listener for many streams, the credential's scope and limits,
// and a listener whose connection is killed coming back without losing an event.
// A server of its own: the status stream is read below the server-wide xmin (core's testing/stream-wait.ts).
const db = useTestDatabase({ isOwnServer: true });
let fx: ProducerFixtures;
let hub: StreamHub;
let notifier: StreamNotifier;
let server: Awaited<ReturnType<typeof startEventsServer>>;
const errors: unknown[] = [];

beforeAll(async () => {
  fx = await seedProducerFixtures(db);
  hub = new StreamHub({ pool: db.appPool, listen: { connectionString: db.appConnectionString }, pollMs: 2000, onError: (e) => errors.push(e) });
  notifier = new StreamNotifier(db.appPool);
  server = await startEventsServer({ db: db.appPool, prisma: db.prisma, hub, limiter: new StreamLimiter(250), recheckMs: 200 });
});
afterAll(async () => {
  await server?.close();
  await hub?.close();
  notifier?.close();
});

const bearer = (key: string) => ({ authorization: `Bearer ${key}` });
let n = 0;
const enqueue = async (over: { job_type?: string; tenant_id?: string } = {}) => {
  const [r] = await enqueueJobs(db.appPool, [
    { job_type: "fx.email", tenant_id: fx.tenantA, payload: { message_ref: "s3://m/1", version: 1 }, idempotency_key: `sse-${++n}-${randomUUID()}`, ...over },
  ]);
  notifier.touch();
  return r!.job_id;
};
const claim = async (jobId: string): Promise<ClaimedJob> => {
  for (;;) {
    const claimed = await claimJobs(db.appPool, { poolId: "fx-pool", workerId: "w1", limit: 100 });
    const mine = claimed.find((c) => c.jobId === jobId);
    const others = claimed.filter((c) => c.jobId !== jobId);
    await completeJobs(
      db.appPool,
      others.map((c) => ({ id: c.id, leaseToken: c.leaseToken, attempt: c.attempt, result: null })),
    );
    notifier.touch();
    if (mine) return mine;
    if (claimed.length === 0) throw new Error(`job ${jobId} not claimable`);
  }
};
const retry = async (job: ClaimedJob) => {
  await failJobs(db.appPool, [
    {
      id: job.id,
      leaseToken: job.leaseToken,
      attempt: job.attempt,
      outcome: "failed",
      error: { code: "FLAKY", class: "retryable", message: "try again", worker_version: "t", attempt: job.attempt, trace_id: "t", last_checkpoint: null },
      next: { state: "RETRY_WAIT", runAt: new Date(Date.now() - 1) },
    },
  ]);
  notifier.touch();
};
const succeed = async (job: ClaimedJob) => {
  await completeJobs(db.appPool, [{ id: job.id, leaseToken: job.leaseToken, attempt: job.attempt, result: { ok: true } }]);
  notifier.touch();
};
const names = (ms: SseMessage[]) => ms.map((m) => m.event);
const dataOf = (m: SseMessage) => JSON.parse(m.data) as { id: string; job_id: string; status: string; attempt: number; progress: unknown };
const listeners = async () =>
  Number(
    (await db.pool.query<{ n: string }>(`SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = 'porter-stream' AND datname = current_database()`))
      .rows[0]!.n,
  );

describe("GET /api/events?job_id=", () => {
  it("streams a job that retries then succeeds: the snapshot, then every state in order, with SSE headers", async () => {
    const jobId = await enqueue();
    const sse = await openSse(`${server.url}/api/events?job_id=${jobId}`, bearer(fx.keyA));
    expect(sse.res.status).toBe(200);
    expect(sse.res.headers.get("content-type")).toMatch(/^text\/event-stream/);
    expect(sse.res.headers.get("cache-control")).toBe("no-store, no-transform");
    expect(sse.res.headers.get("x-accel-buffering")).toBe("no");
    await sse.until(1);
    expect(sse.state.retry).toBe(2000);
    expect(names(sse.messages)).toEqual(["job.ready"]); // the snapshot
    const first = await claim(jobId);
    await extendLeases(db.appPool, [{ id: first.id, leaseToken: first.leaseToken, attempt: first.attempt, progress: JSON.stringify({ fraction: 0.25 }) }]);
    notifier.touch();
    await retry(first);
    const second = await claim(jobId);
    await succeed(second);
    await sse.until(6);
    sse.close();
    expect(names(sse.messages)).toEqual(["job.ready", "job.running", "job.progress", "job.retry_wait", "job.running", "job.succeeded"]);
    const data = sse.messages.map(dataOf);
    expect(data.map((d) => d.attempt)).toEqual([0, 1, 1, 1, 2, 2]);
    expect(data[2]!.progress).toEqual({ fraction: 0.25 });
    expect(data.every((d) => d.job_id === jobId)).toBe(true);
    expect(sse.messages.every((m) => m.id === dataOf(m).id)).toBe(true);
    // Ids are strictly increasing in the stream's order (a live event never repeats the snapshot's id).
    expect(new Set(sse.messages.map((m) => m.id)).size).toBe(6);
  });

  it("resumes after a dropped connection with Last-Event-ID: nothing lost, nothing twice", async () => {
    const jobId = await enqueue();
    const sse = await openSse(`${server.url}/api/events?job_id=${jobId}`, bearer(fx.keyA));
    await sse.until(1);
    const first = await claim(jobId);
    await sse.until(2);
    const lastId = sse.messages[1]!.id!;
    sse.close();
    // Events while disconnected.
    await retry(first);
    const second = await claim(jobId);
    await succeed(second);
    const again = await openSse(`${server.url}/api/events?job_id=${jobId}`, { ...bearer(fx.keyA), "last-event-id": lastId });
    await again.until(3);
    await new Promise((r) => setTimeout(r, 300));
    again.close();
    expect(names(again.messages)).toEqual(["job.retry_wait", "job.running", "job.succeeded"]);
  });

  it("a tenant stream (no job_id) gets only new events of its tenant and job types", async () => {
    const sse = await openSse(`${server.url}/api/events`, bearer(fx.keyEmailOnly));
    await expect.poll(() => hub.size, { timeout: 10_000 }).toBeGreaterThan(0);
    const other = await enqueue({ tenant_id: fx.tenantB });
    const parse = await enqueue({ job_type: "fx.parse" });
    const mine = await enqueue();
    await sse.until(1);
    await new Promise((r) => setTimeout(r, 300));
    sse.close();
    expect(sse.messages.map((m) => dataOf(m).job_id)).toEqual([mine]);
    expect([other, parse]).not.toContain(dataOf(sse.messages[0]!).job_id);
  });

  it("refuses another tenant's job and a job type outside the key's scope with 404, bad input with 400, no key with 401", async () => {
    const ofB = await enqueue({ tenant_id: fx.tenantB });
    const parse = await enqueue({ job_type: "fx.parse" });
    const status = async (path: string, headers: Record<string, string>) => {
      const res = await fetch(`${server.url}${path}`, { headers });
      const body = (await res.json()) as { error: { code: string } };
      return { status: res.status, code: body.error.code };
    };
    expect(await status(`/api/events?job_id=${ofB}`, bearer(fx.keyA))).toEqual({ status: 404, code: "NOT_FOUND" });
    expect(await status(`/api/events?job_id=${parse}`, bearer(fx.keyEmailOnly))).toEqual({ status: 404, code: "NOT_FOUND" });
    expect(await status(`/api/events?job_id=${randomUUID()}`, bearer(fx.keyA))).toEqual({ status: 404, code: "NOT_FOUND" });
    expect(await status(`/api/events?job_id=not-a-uuid`, bearer(fx.keyA))).toEqual({ status: 400, code: "BAD_REQUEST" });
    expect(await status(`/api/events?job_id=${parse}`, { ...bearer(fx.keyA), "last-event-id": "12;DROP" })).toEqual({ status: 400, code: "BAD_REQUEST" });
    expect(await status(`/api/events`, {})).toEqual({ status: 401, code: "UNAUTHORIZED" });
    expect(await status(`/api/events`, bearer(fx.keyAB))).toEqual({ status: 400, code: "BAD_REQUEST" });
    expect(await status(`/api/events?tenant_id=${fx.tenantB}`, bearer(fx.keyA))).toEqual({ status: 403, code: "FORBIDDEN" });
  });

  it("a reset when the Last-Event-ID is older than the log keeps, then the job's current state", async () => {
    const jobId = await enqueue();
    const sse = await openSse(`${server.url}/api/events?job_id=${jobId}`, bearer(fx.keyA));
    await sse.until(1);
    await claim(jobId);
    await sse.until(2);
    sse.close();
    const staleId = sse.messages[1]!.id!;
    await pruneStream(db.appPool, { now: new Date(Date.now() + STREAM_RETENTION_MS + 60_000) });
    const again = await openSse(`${server.url}/api/events?job_id=${jobId}`, { ...bearer(fx.keyA), "last-event-id": staleId });
    await again.until(2);
    again.close();
    expect(names(again.messages)).toEqual(["reset", "job.running"]);
  });
});

describe("one listener, many streams", () => {
  it("200 concurrent streams hold one porter-stream connection; the listener starts and stops with them", async () => {
    await expect.poll(listeners, { timeout: 5000 }).toBe(0);
    const jobId = await enqueue();
    const streams = await Promise.all(Array.from({ length: 200 }, () => openSse(`${server.url}/api/events?job_id=${jobId}`, bearer(fx.keyA))));
    expect(streams.every((s) => s.res.status === 200)).toBe(true);
    await Promise.all(streams.map((s) => s.until(1)));
    expect(await listeners()).toBe(1);
    const readsBefore = hub.reads;
    await claim(jobId);
    await Promise.all(streams.map((s) => s.until(2)));
    // One read per wake-up served all 200 (a few more may come from the backstop poll, a second
    // wake or a re-read while another transaction held the xmin back) — not one per stream.
    expect(hub.reads - readsBefore).toBeLessThan(20);
    for (const s of streams) s.close();
    await expect.poll(() => hub.size, { timeout: 5000 }).toBe(0);
    await expect.poll(listeners, { timeout: 5000 }).toBe(0);
  });

  it("429 with Retry-After past the per-credential limit; a slot frees when a stream ends", async () => {
    const limited = await startEventsServer({ db: db.appPool, prisma: db.prisma, hub, limiter: new StreamLimiter(3), keepAliveMs: 50 });
    try {
      const open = await Promise.all(Array.from({ length: 3 }, () => openSse(`${limited.url}/api/events`, bearer(fx.keyB))));
      expect(open.map((s) => s.res.status)).toEqual([200, 200, 200]);
      // Idle streams carry keep-alive comments (`: ka`).
      await expect.poll(() => open[0]!.state.comments, { timeout: 10_000 }).toBeGreaterThan(1);
      const refused = await fetch(`${limited.url}/api/events`, { headers: bearer(fx.keyB) });
      expect(refused.status).toBe(429);
      expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
      expect(((await refused.json()) as { error: { code: string } }).error.code).toBe("TOO_MANY_REQUESTS");
      // Another credential is not affected.
      const other = await openSse(`${limited.url}/api/events`, bearer(fx.keyA));
      expect(other.res.status).toBe(200);
      other.close();
      open[0]!.close();
      await expect
        .poll(async () => {
          const s = await openSse(`${limited.url}/api/events`, bearer(fx.keyB));
          s.close();
          return s.res.status;
        })
        .toBe(200);
      for (const s of open) s.close();
    } finally {
      await limited.close();
    }
  });

  it("the listener's connection killed: it reconnects, nothing is lost, the process goes on", async () => {
    const jobId = await enqueue();
    const sse = await openSse(`${server.url}/api/events?job_id=${jobId}`, bearer(fx.keyA));
    await sse.until(1);
    await expect.poll(listeners, { timeout: 10_000 }).toBe(1);
    const { rows } = await db.pool.query<{ ok: boolean }>(
      `SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE application_name = 'porter-stream' AND datname = current_database()`,
    );
    expect(rows.map((r) => r.ok)).toEqual([true]);
    // Changes while it is down (their NOTIFYs go nowhere).
    const job = await claim(jobId);
    await succeed(job);
    await sse.until(3, 10_000);
    expect(names(sse.messages)).toEqual(["job.ready", "job.running", "job.succeeded"]);
    await expect.poll(listeners, { timeout: 10_000 }).toBe(1);
    // And live again over the new connection.
    const next = await enqueue();
    const sse2 = await openSse(`${server.url}/api/events?job_id=${next}`, bearer(fx.keyA));
    await sse2.until(1);
    await claim(next);
    await sse2.until(2);
    sse.close();
    sse2.close();
    expect(errors.length).toBeGreaterThan(0); // the drop was reported, not thrown
  });
});

describe("GET /status/<tenant_id>/events", () => {
  it("a link of the tenant streams its job types; another tenant's path, a revoked or expired link are refused", async () => {
    const { id: linkId } = await createStatusLink(db.prisma, { tenantId: fx.tenantA, jobTypes: ["fx.email"], actor: "test" });
    const sse = await openSse(`${server.url}/status/${fx.tenantA}/events`, { "x-test-link": linkId });
    expect(sse.res.status).toBe(200);
    await expect.poll(() => hub.size, { timeout: 10_000 }).toBeGreaterThan(0);
    const skipped = await enqueue({ job_type: "fx.parse" });
    const mine = await enqueue();
    // Events of earlier tests' jobs that committed as this stream opened may come first (a new
    // stream starts at the hub's position, not at the request's instant): wait for this one.
    await expect.poll(() => sse.messages.map((m) => dataOf(m).job_id), { timeout: 10_000 }).toContain(mine);
    expect(sse.messages.map((m) => dataOf(m).job_id)).not.toContain(skipped); // outside the link's job types
    expect((await fetch(`${server.url}/status/${fx.tenantB}/events`, { headers: { "x-test-link": linkId } })).status).toBe(404);
    const parse = await enqueue({ job_type: "fx.parse" });
    expect((await fetch(`${server.url}/status/${fx.tenantA}/events?job_id=${parse}`, { headers: { "x-test-link": linkId } })).status).toBe(404);
    // Revoked: the open stream ends at its next re-check, and a new one is refused.
    await revokeStatusLink(db.prisma, { id: linkId, actor: "test" });
    await sse.ended(5000);
    expect((await fetch(`${server.url}/status/${fx.tenantA}/events`, { headers: { "x-test-link": linkId } })).status).toBe(404);
    const { id: expiring } = await createStatusLink(db.prisma, { tenantId: fx.tenantA, actor: "test" });
    await db.pool.query(`UPDATE tenant_status_links SET created_at = now() - interval '2 hours', expires_at = now() - interval '1 second' WHERE id = $1`, [
      expiring,
    ]);
    expect((await fetch(`${server.url}/status/${fx.tenantA}/events`, { headers: { "x-test-link": expiring } })).status).toBe(404);
    expect((await fetch(`${server.url}/status/${fx.tenantA}/events`, {})).status).toBe(404);
    const operator = await openSse(`${server.url}/status/${fx.tenantA}/events?job_id=${parse}`, { "x-test-operator": "op@example.com" });
    expect(operator.res.status).toBe(200);
    await operator.until(1);
    operator.close();
  });
});
