import { randomUUID } from "node:crypto";
import { StreamLimiter } from "@porter/api";
import { startEventsServer } from "@porter/api/testing/events-server";
import { type ProducerFixtures, seedProducerFixtures } from "@porter/api/testing/fixtures";
import type { StreamEvent } from "@porter/contracts";
import { type ClaimedJob, claimJobs, completeJobs, enqueueJobs, failJobs, StreamHub, StreamNotifier } from "@porter/core";
import { useTestDatabase } from "@porter/db/testing/test-database";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createProducerClient, type ProducerClient } from "./producer";
import { WaitForTimeoutError, WatchError } from "./watch";

// The SDK's watch/waitFor against the real SSE handler and database: the events in order, ending
// at the terminal one, across a connection the server drops mid-stream.
// A server of its own: the status stream is read below the server-wide xmin (core's testing/stream-wait.ts).
const db = useTestDatabase({ isOwnServer: true });
let fx: ProducerFixtures;
let hub: StreamHub;
let notifier: StreamNotifier;
let server: Awaited<ReturnType<typeof startEventsServer>>;
let client: ProducerClient;

beforeAll(async () => {
  fx = await seedProducerFixtures(db);
  hub = new StreamHub({ pool: db.appPool, listen: { connectionString: db.appConnectionString } });
  notifier = new StreamNotifier(db.appPool);
  server = await startEventsServer({ db: db.appPool, prisma: db.prisma, hub, limiter: new StreamLimiter(20) });
  client = createProducerClient({ url: server.url, apiKey: fx.keyA });
});
afterAll(async () => {
  await server?.close();
  await hub?.close();
  notifier?.close();
});

const enqueue = async () => {
  const [r] = await enqueueJobs(db.appPool, [
    { job_type: "fx.email", tenant_id: fx.tenantA, payload: { message_ref: "s3://m/1" }, idempotency_key: `w-${randomUUID()}` },
  ]);
  notifier.touch();
  return r!.job_id;
};
const claim = async (jobId: string): Promise<ClaimedJob> => {
  for (;;) {
    const claimed = await claimJobs(db.appPool, { poolId: "fx-pool", workerId: "w1", limit: 100 });
    const mine = claimed.find((c) => c.jobId === jobId);
    await completeJobs(
      db.appPool,
      claimed.filter((c) => c !== mine).map((c) => ({ id: c.id, leaseToken: c.leaseToken, attempt: c.attempt, result: null })),
    );
    notifier.touch();
    if (mine) return mine;
    if (claimed.length === 0) throw new Error("not claimable");
  }
};
const retry = async (job: ClaimedJob) => {
  await failJobs(db.appPool, [
    {
      id: job.id,
      leaseToken: job.leaseToken,
      attempt: job.attempt,
      outcome: "failed",
      error: { code: "FLAKY", class: "retryable", message: "again", worker_version: "t", attempt: job.attempt, trace_id: "t", last_checkpoint: null },
      next: { state: "RETRY_WAIT", runAt: new Date(Date.now() - 1) },
    },
  ]);
  notifier.touch();
};
const succeed = async (job: ClaimedJob) => {
  await completeJobs(db.appPool, [{ id: job.id, leaseToken: job.leaseToken, attempt: job.attempt, result: { ok: 1 } }]);
  notifier.touch();
};

describe("watch", () => {
  it("yields the job's events and ends at the terminal one, across a connection dropped mid-stream", async () => {
    const jobId = await enqueue();
    const seen: StreamEvent[] = [];
    let pending: Promise<ClaimedJob> | undefined;
    const lastEventIds: Array<string | null> = [];
    const counting = createProducerClient({
      url: server.url,
      apiKey: fx.keyA,
      fetch: (input, init) => {
        lastEventIds.push(new Headers(init?.headers).get("last-event-id"));
        return fetch(input, init);
      },
    });
    const done = (async () => {
      for await (const event of counting.watch(jobId)) {
        seen.push(event);
        if (seen.length === 2) {
          // The server drops every connection; the next events happen while the client is away.
          for (const s of server.sockets) s.destroy();
          await retry((await pending)!);
          const second = await claim(jobId);
          await succeed(second);
        }
      }
    })();
    await expect.poll(() => seen.length).toBe(1);
    pending = claim(jobId);
    await pending;
    await done;
    expect(seen.map((e) => e.event)).toEqual(["job.ready", "job.running", "job.retry_wait", "job.running", "job.succeeded"]);
    expect(seen.map((e) => e.data.attempt)).toEqual([0, 1, 1, 2, 2]);
    expect(seen.every((e) => e.id === e.data.id && e.data.job_id === jobId)).toBe(true);
    // It reconnected, resuming after the last event it had.
    expect(lastEventIds.slice(0, 2)).toEqual([null, seen[1]!.id]);
  });

  it("resumes from a given lastEventId; refuses another tenant's job with a WatchError", async () => {
    const jobId = await enqueue();
    const first: StreamEvent[] = [];
    const abort = new AbortController();
    const watching = (async () => {
      for await (const e of client.watch(jobId, { signal: abort.signal })) first.push(e);
    })();
    await expect.poll(() => first.length).toBe(1);
    abort.abort();
    await watching;
    await succeed(await claim(jobId));
    const rest: string[] = [];
    for await (const e of client.watch(jobId, { lastEventId: first[0]!.id })) rest.push(e.event);
    expect(rest).toEqual(["job.running", "job.succeeded"]);
    const [ofB] = await enqueueJobs(db.appPool, [{ job_type: "fx.email", tenant_id: fx.tenantB, payload: {}, idempotency_key: `b-${randomUUID()}` }]);
    const iterator = client.watch(ofB!.job_id)[Symbol.asyncIterator]();
    await expect(iterator.next()).rejects.toMatchObject({ name: "WatchError", status: 404, code: "NOT_FOUND" });
    expect(WatchError).toBeDefined();
  });
});

describe("waitFor", () => {
  it("resolves with the terminal event's data", async () => {
    const jobId = await enqueue();
    const waiting = client.waitFor(jobId, { timeoutMs: 10_000 });
    await succeed(await claim(jobId));
    expect(await waiting).toMatchObject({ job_id: jobId, status: "SUCCEEDED", attempt: 1, failure: null });
  });

  it("rejects with a typed timeout error when the job does not finish in time", async () => {
    const jobId = await enqueue();
    const started = Date.now();
    const error = await client.waitFor(jobId, { timeoutMs: 300 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(WaitForTimeoutError);
    expect(error).toMatchObject({ code: "TIMEOUT", jobId, timeoutMs: 300 });
    expect(Date.now() - started).toBeLessThan(3000);
  });
});
