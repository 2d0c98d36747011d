import type { TJobError } from "@porter/contracts";
import { useTestDatabase } from "@porter/db/testing/test-database";
import { beforeAll, describe, expect, it } from "vitest";
import { cancelJob } from "../sql/cancel-job";
import { type ClaimedJob, claimJobs } from "../sql/claim-jobs";
import { completeJobs } from "../sql/complete-jobs";
import { type EnqueueInput, enqueueJobs } from "../sql/enqueue-jobs";
import { expireJobs } from "../sql/expire-jobs";
import { extendLeases } from "../sql/extend-leases";
import { failJobs } from "../sql/fail-jobs";
import { redriveJobs } from "../sql/redrive-jobs";
import { rescueExpiredLeases } from "../sql/rescue-expired-leases";
import { controlPlane } from "../testing/control-plane-factory";
import { XMIN_WAIT } from "../testing/stream-wait";
import {
  compareCursor,
  cursorRetained,
  formatCursor,
  parseCursor,
  pruneStream,
  readStream,
  STREAM_RETENTION_MS,
  type StreamRow,
  streamEventData,
  streamEventName,
  streamHead,
  WHOLE_ROW,
  ZERO_CURSOR,
} from "./log";

// The status stream's log: every transition writes its event (statement triggers of
// sql/routines/stream.sql), in order, and a reader below the snapshot xmin never skips a late commit.
// A server of its own: the log is read below the server-wide xmin (stream-wait.ts).
const db = useTestDatabase({ isOwnServer: true });
let n = 0;
const input = (over: Partial<EnqueueInput> = {}): EnqueueInput => ({
  job_type: "q1.job",
  tenant_id: "tenant_A",
  payload: { n: ++n },
  idempotency_key: `stream-${n}`,
  ...over,
});
const error = (attempt: number, cls: TJobError["class"] = "permanent"): TJobError => ({
  code: "BOOM",
  class: cls,
  message: "boom at db.internal.example.com",
  worker_version: "test",
  attempt,
  trace_id: "t",
  last_checkpoint: null,
});

const allRows = async (): Promise<StreamRow[]> => {
  const out: StreamRow[] = [];
  let after = ZERO_CURSOR;
  for (;;) {
    const rows = await readStream(db.pool, { after });
    out.push(...rows);
    if (rows.length < 1000) return out;
    after = rows[rows.length - 1]!.cursor;
  }
};
const rowsOf = async (jobId: string) => (await allRows()).filter((r) => r.jobId === jobId);
/** The job's events as `name@attempt` (polled: another database's open transaction can hold xmin back a moment). */
const eventsOf = async (jobId: string, expected: string[]) => {
  await expect.poll(async () => (await rowsOf(jobId)).map((r) => `${streamEventName(r)}@${r.attempt}`), XMIN_WAIT).toEqual(expected);
};

const claim = async (jobId: string, now?: Date): Promise<ClaimedJob> => {
  for (;;) {
    const claimed = await claimJobs(db.pool, { poolId: "p1", workerId: "w1", limit: 100, now });
    const mine = claimed.find((c) => c.jobId === jobId);
    const others = claimed.filter((c) => c.jobId !== jobId);
    await completeJobs(
      db.pool,
      others.map((c) => ({ id: c.id, leaseToken: c.leaseToken, attempt: c.attempt, result: null })),
    );
    if (mine) return mine;
    if (claimed.length === 0) throw new Error(`job ${jobId} not claimable`);
  }
};
const enqueue = async (over: Partial<EnqueueInput> = {}) => (await enqueueJobs(db.pool, [input(over)]))[0]!.job_id;

beforeAll(async () => {
  await controlPlane(db.pool, {
    queues: [
      { id: "q1", lease_seconds: 30, max_runtime_s: 60, retention_s: 3600 },
      { id: "q2", lease_seconds: 30, max_runtime_s: 60, retention_s: 3600 },
    ],
  });
});

describe("the stream triggers", () => {
  it("enqueue, claim, retry, claim, succeed: one state event each, in order", async () => {
    const jobId = await enqueue();
    const first = await claim(jobId);
    await failJobs(db.pool, [
      {
        id: first.id,
        leaseToken: first.leaseToken,
        attempt: first.attempt,
        outcome: "failed",
        error: error(1, "retryable"),
        next: { state: "RETRY_WAIT", runAt: new Date(Date.now() - 1) },
      },
    ]);
    const second = await claim(jobId);
    await completeJobs(db.pool, [{ id: second.id, leaseToken: second.leaseToken, attempt: second.attempt, result: { ok: true } }]);
    await eventsOf(jobId, ["job.ready@0", "job.running@1", "job.retry_wait@1", "job.running@2", "job.succeeded@2"]);
    const rows = await rowsOf(jobId);
    // The raw error's code, class and message only are kept; none of it reaches a tenant unprojected.
    expect(rows[2]!.failure).toEqual({ code: "BOOM", class: "retryable", message: "boom at db.internal.example.com" });
    expect(rows.filter((r) => r !== rows[2]).map((r) => r.failure)).toEqual([null, null, null, null]);
    expect(rows.every((r) => r.tenantId === "tenant_A" && r.jobType === "q1.job")).toBe(true);
    const data = streamEventData(rows[2]!);
    // Tenants get the safe projection: code and class, the host scrubbed from the message.
    expect(data).toMatchObject({
      job_id: jobId,
      status: "RETRY_WAIT",
      attempt: 1,
      failure: { code: "BOOM", class: "retryable", message: "boom at <host>" },
      id: formatCursor(rows[2]!.cursor),
    });
    expect(JSON.stringify(data)).not.toContain("internal.example.com");
  });

  it("dead: the terminal event carries the raw failure", async () => {
    const jobId = await enqueue();
    const job = await claim(jobId);
    await failJobs(db.pool, [{ id: job.id, leaseToken: job.leaseToken, attempt: job.attempt, outcome: "failed", error: error(1), next: { state: "DEAD" } }]);
    await eventsOf(jobId, ["job.ready@0", "job.running@1", "job.dead@1"]);
    expect((await rowsOf(jobId))[2]!.failure).toMatchObject({ code: "BOOM", class: "permanent" });
  });

  it("cancel of a queued job; a cancel request on a running one writes nothing until it ends", async () => {
    const queued = await enqueue();
    await cancelJob(db.pool, { jobId: queued, actor: "op" });
    await eventsOf(queued, ["job.ready@0", "job.cancelled@0"]);
    const runningId = await enqueue();
    const job = await claim(runningId);
    await cancelJob(db.pool, { jobId: runningId, actor: "op" });
    await eventsOf(runningId, ["job.ready@0", "job.running@1"]);
    await rescueExpiredLeases(db.pool, { now: new Date(Date.now() + 31_000) });
    await eventsOf(runningId, ["job.ready@0", "job.running@1", "job.cancelled@1"]);
    expect(job.attempt).toBe(1);
  });

  it("expire: a passed deadline", async () => {
    const jobId = await enqueue({ deadline_at: new Date(Date.now() + 1000).toISOString() });
    await expireJobs(db.pool, { now: new Date(Date.now() + 5000) });
    await eventsOf(jobId, ["job.ready@0", "job.expired@0"]);
  });

  it("rescue: an expired lease goes back to the queue", async () => {
    const jobId = await enqueue();
    await claim(jobId);
    await rescueExpiredLeases(db.pool, { now: new Date(Date.now() + 31_000) });
    const { rows } = await db.pool.query<{ state: string; attempt: number }>(`SELECT state, attempt FROM jobs WHERE job_id = $1`, [jobId]);
    await eventsOf(jobId, ["job.ready@0", "job.running@1", `job.${rows[0]!.state.toLowerCase()}@${rows[0]!.attempt}`]);
    expect(rows[0]!.state).not.toBe("RUNNING");
  });

  it("redrive: a dead job back in the queue", async () => {
    const jobId = await enqueue();
    const job = await claim(jobId);
    await failJobs(db.pool, [{ id: job.id, leaseToken: job.leaseToken, attempt: job.attempt, outcome: "failed", error: error(1), next: { state: "DEAD" } }]);
    await redriveJobs(db.pool, { jobIds: [jobId], actor: "alice" });
    const { rows } = await db.pool.query<{ attempt: number }>(`SELECT attempt FROM jobs WHERE job_id = $1`, [jobId]);
    await eventsOf(jobId, ["job.ready@0", "job.running@1", "job.dead@1", `job.ready@${rows[0]!.attempt}`]);
  });

  it("progress: an event when a heartbeat changes it, none for a bare lease extension or the same value", async () => {
    const jobId = await enqueue();
    const job = await claim(jobId);
    const ref = { id: job.id, leaseToken: job.leaseToken, attempt: job.attempt };
    await extendLeases(db.pool, [{ ...ref, progress: JSON.stringify({ fraction: 0.5, step: "copy" }) }]);
    await extendLeases(db.pool, [ref]);
    await extendLeases(db.pool, [{ ...ref, progress: JSON.stringify({ fraction: 0.5, step: "copy" }) }]);
    await extendLeases(db.pool, [{ ...ref, progress: JSON.stringify({ fraction: 0.9 }) }]);
    await completeJobs(db.pool, [{ ...ref, result: null }]);
    await eventsOf(jobId, ["job.ready@0", "job.running@1", "job.progress@1", "job.progress@1", "job.succeeded@1"]);
    const rows = await rowsOf(jobId);
    expect(rows.map((r) => r.progress)).toEqual([null, null, { fraction: 0.5, step: "copy" }, { fraction: 0.9 }, { fraction: 0.9 }]);
    expect(streamEventData(rows[2]!).progress).toEqual({ fraction: 0.5, step: "copy" });
  });

  it("a batch enqueue writes one event per job from one statement", async () => {
    const results = await enqueueJobs(db.pool, [input(), input(), input()]);
    const ids = results.map((r) => r.job_id);
    await expect.poll(async () => (await allRows()).filter((r) => ids.includes(r.jobId)).length, XMIN_WAIT).toBe(3);
    const rows = (await allRows()).filter((r) => ids.includes(r.jobId));
    expect(new Set(rows.map((r) => String(r.cursor.xid))).size).toBe(1);
  });

  it("keeps one statement's events of one tenant in one row, read one event per job, resumable inside the row", async () => {
    const results = await enqueueJobs(db.pool, [
      input(),
      input({ tenant_id: "tenant_B", job_type: "q2.job" }),
      input(),
      input(),
      input({ tenant_id: "tenant_B", job_type: "q2.job" }),
    ]);
    const ids = results.map((r) => r.job_id);
    await expect.poll(async () => (await allRows()).filter((r) => ids.includes(r.jobId)).length, XMIN_WAIT).toBe(5);
    // Two rows: tenant_A's three jobs, tenant_B's two.
    const { rows: stored } = await db.pool.query<{ tenant_id: string; n: number }>(
      `SELECT tenant_id, cardinality(job_ids) AS n FROM job_stream WHERE job_ids && $1::uuid[] ORDER BY tenant_id`,
      [ids],
    );
    expect(stored).toEqual([
      { tenant_id: "tenant_A", n: 3 },
      { tenant_id: "tenant_B", n: 2 },
    ]);
    const events = (await allRows()).filter((r) => ids.includes(r.jobId));
    expect(events.map((r) => r.jobType).sort()).toEqual(["q1.job", "q1.job", "q1.job", "q2.job", "q2.job"]);
    for (let i = 1; i < events.length; i++) expect(compareCursor(events[i - 1]!.cursor, events[i]!.cursor)).toBeLessThan(0);
    // Pages of one event: each read resumes after the last one, inside a row as between rows.
    const start = { ...events[0]!.cursor, k: events[0]!.cursor.k - 1 };
    const paged: StreamRow[] = [];
    let after = start;
    for (let i = 0; i < 5; i++) {
      const [next] = await readStream(db.pool, { after, limit: 1 });
      paged.push(next!);
      after = next!.cursor;
    }
    expect(paged.map((r) => formatCursor(r.cursor))).toEqual(events.map((r) => formatCursor(r.cursor)));
    // A replay up to an event inside a row stops there; one tenant's replay skips the other's row.
    const upTo = events[1]!.cursor;
    expect((await readStream(db.pool, { after: start, upTo })).map((r) => r.jobId)).toEqual([events[0]!.jobId, events[1]!.jobId]);
    const tenantA = await readStream(db.pool, { after: start, tenantId: "tenant_A" });
    expect(tenantA.filter((r) => ids.includes(r.jobId)).map((r) => r.tenantId)).toEqual(["tenant_A", "tenant_A", "tenant_A"]);
  });

  it("reads back a batch of 600 jobs — arrays stored out of line — as 600 events, resumable anywhere", async () => {
    const ids = (
      await enqueueJobs(
        db.pool,
        Array.from({ length: 600 }, () => input()),
      )
    ).map((r) => r.job_id);
    await expect.poll(async () => (await allRows()).filter((r) => ids.includes(r.jobId)).length, XMIN_WAIT).toBe(600);
    // A row per statement of the enqueue (chunks of 250): its job ids past the TOAST threshold,
    // stored without compression, its job types compressed with lz4 (20261203000400).
    const { rows: stored } = await db.pool.query<{ n: number; ids: string | null; types: string | null }>(
      `SELECT cardinality(job_ids) AS n, pg_column_compression(job_ids) AS ids, pg_column_compression(job_types) AS types
         FROM job_stream WHERE job_ids && $1::uuid[] ORDER BY id`,
      [ids],
    );
    expect(stored.map((r) => [r.n, r.ids])).toEqual([
      [250, null],
      [250, null],
      [100, null],
    ]);
    expect(stored.slice(0, 2).map((r) => r.types)).toEqual(["lz4", "lz4"]);
    const events = (await allRows()).filter((r) => ids.includes(r.jobId));
    expect(events.map((r) => r.jobId).sort()).toEqual([...ids].sort());
    const resumed = await readStream(db.pool, { after: events[299]!.cursor, limit: 1000 });
    expect(resumed.filter((r) => ids.includes(r.jobId)).map((r) => r.jobId)).toEqual(events.slice(300).map((r) => r.jobId));
  });

  it("reads a Last-Event-ID of the one-event-per-row form as after that whole row", async () => {
    const results = await enqueueJobs(db.pool, [input(), input()]);
    const ids = results.map((r) => r.job_id);
    await expect.poll(async () => (await allRows()).filter((r) => ids.includes(r.jobId)).length, XMIN_WAIT).toBe(2);
    const [first] = (await allRows()).filter((r) => ids.includes(r.jobId));
    const old = parseCursor(`${first!.cursor.xid}-${first!.cursor.id}`)!;
    expect(old).toEqual({ xid: first!.cursor.xid, id: first!.cursor.id, k: WHOLE_ROW });
    expect((await readStream(db.pool, { after: old, limit: 100_000 })).map((r) => r.jobId)).not.toContain(ids[1]);
    expect(parseCursor(formatCursor(first!.cursor))).toEqual(first!.cursor);
    expect(parseCursor(`1-2-${WHOLE_ROW + 1}`)).toBeNull();
    expect(parseCursor("1-2-3-4")).toBeNull();
  });
});

describe("the xmin cursor", () => {
  it("does not skip a transaction that commits after a later one was read", async () => {
    const slow = await db.pool.connect();
    try {
      await slow.query("BEGIN");
      const [late] = await enqueueJobs(slow, [input({ job_type: "q2.job", tenant_id: "tenant_B", idempotency_key: "late-commit" })]);
      // A later transaction commits while the first is still open.
      const quick = await enqueue();
      const head = await streamHead(db.pool);
      const seen = await readStream(db.pool, { after: head });
      expect(seen.map((r) => r.jobId)).not.toContain(quick); // held back: an older transaction is open
      expect((await readStream(db.pool, { after: ZERO_CURSOR, limit: 100_000 })).map((r) => r.jobId)).not.toContain(quick);
      await slow.query("COMMIT");
      await expect
        .poll(async () => (await readStream(db.pool, { after: head, limit: 100_000 })).map((r) => r.jobId), XMIN_WAIT)
        .toEqual(expect.arrayContaining([late!.job_id, quick]));
      const after = await readStream(db.pool, { after: head, limit: 100_000 });
      // The late commit's event is ordered by its xid (taken first), before the quick one.
      expect(after.findIndex((r) => r.jobId === late!.job_id)).toBeLessThan(after.findIndex((r) => r.jobId === quick));
    } finally {
      await slow.query("ROLLBACK").catch(() => {});
      slow.release();
    }
  });
});

describe("retention", () => {
  it("prunes events older than an hour in batches, and an old cursor is no longer retained", async () => {
    const jobId = await enqueue();
    await eventsOf(jobId, ["job.ready@0"]);
    const cursor = (await rowsOf(jobId))[0]!.cursor;
    expect(await cursorRetained(db.pool, cursor)).toBe(true);
    expect(await pruneStream(db.pool, { now: new Date(Date.now() + STREAM_RETENTION_MS - 60_000) })).toEqual({ pruned: 0 });
    const { pruned } = await pruneStream(db.pool, { now: new Date(Date.now() + STREAM_RETENTION_MS + 60_000), batch: 7 });
    expect(pruned).toBeGreaterThan(7);
    expect(await cursorRetained(db.pool, cursor)).toBe(false);
    expect(await allRows()).toEqual([]);
  });
});
