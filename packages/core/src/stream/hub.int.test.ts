import { useTestDatabase } from "@porter/db/testing/test-database";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { claimJobs } from "../sql/claim-jobs";
import { completeJobs } from "../sql/complete-jobs";
import { enqueueJobs } from "../sql/enqueue-jobs";
import { controlPlane } from "../testing/control-plane-factory";
import { XMIN_WAIT } from "../testing/stream-wait";
import { StreamHub } from "./hub";
import { formatCursor, parseCursor, type StreamRow } from "./log";
import { STREAM_NOTIFY_SQL, StreamNotifier } from "./notifier";

// The StreamHub's hand-over: a subscriber resuming from a Last-Event-ID replays with its own query
// up to the hub's cursor and joins the live fan-out after it — while writes keep coming, it gets
// exactly the events after its cursor, none missing, none twice. And wake-ups come by NOTIFY.
// A server of its own: the log is read below the server-wide xmin (stream-wait.ts).
const db = useTestDatabase({ isOwnServer: true });
let hub: StreamHub;
let notifier: StreamNotifier;

beforeAll(async () => {
  await controlPlane(db.pool, { queues: [{ id: "q1" }] });
  hub = new StreamHub({ pool: db.appPool, listen: { connectionString: db.appConnectionString }, pollMs: 60_000, debounceMs: 5 });
  notifier = new StreamNotifier(db.appPool, 10);
});
afterAll(async () => {
  await hub?.close();
  notifier?.close();
});

let n = 0;
const enqueue = async (tenant = "tenant_A") => {
  const [r] = await enqueueJobs(db.appPool, [{ job_type: "q1.job", tenant_id: tenant, payload: { n: ++n }, idempotency_key: `hub-${n}` }]);
  notifier.touch();
  return r!.job_id;
};
const collector = () => {
  const ids: string[] = [];
  const jobs: string[] = [];
  const onEvent = (row: StreamRow, id?: string) => {
    ids.push(id ?? formatCursor(row.cursor));
    jobs.push(row.jobId);
  };
  return { ids, jobs, onEvent };
};

describe("StreamHub", () => {
  it("resumes while writes continue: each resumed subscriber gets exactly the events after its cursor", async () => {
    const reference = collector();
    const ref = await hub.subscribe({ tenantId: "tenant_A", jobTypes: null }, { onEvent: reference.onEvent });
    const resumed: Array<{ from: number; c: ReturnType<typeof collector>; close: () => void }> = [];
    const total = 120;
    const writer = (async () => {
      for (let i = 0; i < total; i++) {
        await enqueue(i % 5 === 0 ? "tenant_B" : "tenant_A");
        if (i % 3 === 0) await new Promise((r) => setTimeout(r, 2));
      }
    })();
    // Subscribers resume at different points while the writer runs.
    for (let k = 0; k < 6; k++) {
      await expect.poll(() => reference.ids.length, { ...XMIN_WAIT, interval: 5 }).toBeGreaterThan(k * 12 + 1);
      const from = reference.ids.length - 1 - (k % 3);
      const c = collector();
      const sub = await hub.subscribe({ tenantId: "tenant_A", jobTypes: null }, { onEvent: c.onEvent, lastEventId: parseCursor(reference.ids[from]!)! });
      resumed.push({ from, c, close: sub.close });
    }
    await writer;
    const expected = total - Math.ceil(total / 5);
    await expect.poll(() => reference.ids.length, XMIN_WAIT).toBe(expected);
    for (const r of resumed) {
      await expect.poll(() => r.c.ids.length, XMIN_WAIT).toBe(expected - r.from - 1);
      expect(r.c.ids).toEqual(reference.ids.slice(r.from + 1));
      r.close();
    }
    expect(new Set(reference.jobs).size).toBe(expected);
    // Live delivery came by NOTIFY (the backstop poll is a minute here).
    expect(hub.reads).toBeGreaterThan(1);
    ref.close();
  });

  it("a new job_id subscriber gets the job's current state, then its changes; a scope without job_id only new events", async () => {
    const jobId = await enqueue();
    const one = collector();
    const all = collector();
    const a = await hub.subscribe({ tenantId: "tenant_A", jobTypes: null, jobId }, { onEvent: one.onEvent });
    const b = await hub.subscribe({ tenantId: "tenant_A", jobTypes: ["other.type"] }, { onEvent: all.onEvent });
    expect(one.jobs).toEqual([jobId]);
    await enqueue();
    await new Promise((r) => setTimeout(r, 200));
    expect(one.jobs).toEqual([jobId]);
    expect(all.jobs).toEqual([]); // out of its job types
    a.close();
    b.close();
    await expect.poll(() => hub.size).toBe(0);
    expect(hub.head).toBeNull(); // stopped with its last subscriber
  });
});

describe("StreamHub: a job_id snapshot while the xmin bound holds events back", () => {
  it("shows the current state once; the older events the snapshot already shows are not delivered after it", async () => {
    // Keeps the hub running at its head while the job's first events are written.
    const keep = await hub.subscribe({ tenantId: "tenant_keep", jobTypes: null }, { onEvent: () => {} });
    const seen: string[] = [];
    const ids: string[] = [];
    const holder = await db.pool.connect();
    let sub: { close: () => void } | undefined;
    let claimed: Awaited<ReturnType<typeof claimJobs>>[number] | undefined;
    try {
      await holder.query("BEGIN");
      await holder.query("SELECT pg_current_xact_id()"); // an xid held open: readers stop below it
      const jobId = await enqueue();
      for (;;) {
        const batch = await claimJobs(db.appPool, { poolId: "p1", workerId: "w-held", limit: 100 });
        claimed = batch.find((c) => c.jobId === jobId);
        await completeJobs(
          db.appPool,
          batch.filter((c) => c.jobId !== jobId).map((c) => ({ id: c.id, leaseToken: c.leaseToken, attempt: c.attempt, result: null })),
        );
        if (claimed || batch.length === 0) break;
      }
      expect(claimed).toBeDefined();
      sub = await hub.subscribe(
        { tenantId: "tenant_A", jobTypes: null, jobId },
        {
          onEvent: (row, id) => {
            seen.push(`${row.kind === "progress" ? "progress" : row.state}@${row.attempt}`);
            ids.push(id ?? formatCursor(row.cursor));
          },
        },
      );
      expect(seen).toEqual(["RUNNING@1"]);
    } finally {
      await holder.query("COMMIT");
      holder.release();
    }
    notifier.touch();
    await expect.poll(() => hub.reads, XMIN_WAIT).toBeGreaterThan(0);
    await new Promise((r) => setTimeout(r, 300));
    // READY@0 and RUNNING@1 became readable now; the snapshot showed them: not delivered again.
    expect(seen).toEqual(["RUNNING@1"]);
    await completeJobs(db.appPool, [{ id: claimed!.id, leaseToken: claimed!.leaseToken, attempt: claimed!.attempt, result: null }]);
    notifier.touch();
    await expect.poll(() => seen, XMIN_WAIT).toEqual(["RUNNING@1", "SUCCEEDED@1"]);
    // The snapshot's id is the position of what it shows: resuming from it yields only what followed.
    const resumed: string[] = [];
    const again = await hub.subscribe(
      { tenantId: "tenant_A", jobTypes: null, jobId: claimed!.jobId },
      { onEvent: (row) => resumed.push(`${row.state}@${row.attempt}`), lastEventId: parseCursor(ids[0]!)! },
    );
    expect(resumed).toEqual(["SUCCEEDED@1"]);
    again.close();
    sub?.close();
    keep.close();
  });
});

describe("StreamNotifier", () => {
  it("sends at most one pg_notify per interval, after the touches (a trailing one), on the pool", async () => {
    const listener = await db.pool.connect();
    const received: number[] = [];
    listener.on("notification", (m) => {
      if (m.channel === "porter_stream") received.push(Date.now());
    });
    await listener.query("LISTEN porter_stream");
    // The throttle is about when the notifier sends: each send is stamped as it reaches the pool.
    // (Arrival times at the listener carry PostgreSQL's and the event loop's jitter: two sends 100 ms
    // apart can arrive 73 ms apart on a loaded machine.)
    const sentAt: number[] = [];
    const stamping = {
      query: (...args: Parameters<pg.Pool["query"]>) => {
        sentAt.push(Date.now());
        return (db.appPool.query as (...a: unknown[]) => unknown)(...args);
      },
    } as unknown as pg.Pool;
    const own = new StreamNotifier(stamping, 100);
    try {
      const t0 = Date.now();
      for (let i = 0; i < 50; i++) {
        own.touch();
        await new Promise((r) => setTimeout(r, 5));
      }
      const touching = Date.now() - t0;
      await new Promise((r) => setTimeout(r, 300));
      // ≥ 250 ms of touches every ≥ 5 ms → at most one per 100 ms: the first at once, then one per
      // interval while touches continue, and a trailing one (bounded by how long the touches took:
      // a loaded machine stretches the 5 ms timers).
      expect(own.sent).toBeGreaterThanOrEqual(2);
      expect(own.sent).toBeLessThanOrEqual(Math.floor(touching / 100) + 2);
      expect(sentAt).toHaveLength(own.sent);
      // A timer may fire up to 1 ms early by the wall clock's rounding.
      for (let i = 1; i < sentAt.length; i++) expect(sentAt[i]! - sentAt[i - 1]!).toBeGreaterThanOrEqual(99);
      expect(sentAt[0]! - t0).toBeLessThan(100);
      // Every send reached a listener.
      await expect.poll(() => received.length).toBe(own.sent);
    } finally {
      own.close();
      await listener.query("UNLISTEN porter_stream");
      listener.release();
    }
  });

  it("commits its wake-up without waiting for the WAL flush, and leaves the pool's session as it was", async () => {
    // The statement's own transaction commits asynchronously: the notify lock it holds through its
    // commit (and every enqueue's NOTIFY waits for) is not held through a WAL flush.
    const client = await db.appPool.connect();
    try {
      await client.query("BEGIN");
      await client.query(STREAM_NOTIFY_SQL, ["porter_stream_test"]);
      const { rows } = await client.query<{ setting: string }>(`SELECT current_setting('synchronous_commit') AS setting`);
      expect(rows[0]!.setting).toBe("off");
      await client.query("COMMIT");
      const after = await client.query<{ setting: string }>(`SELECT current_setting('synchronous_commit') AS setting`);
      expect(after.rows[0]!.setting).toBe("on");
    } finally {
      client.release();
    }
    // Through the notifier, on a pool of one connection: delivered, and that connection's claims and
    // acks still commit synchronously.
    const listener = await db.pool.connect();
    const received: string[] = [];
    listener.on("notification", (m) => {
      if (m.channel === "porter_stream") received.push(m.channel);
    });
    await listener.query("LISTEN porter_stream");
    const one = new pg.Pool({ connectionString: db.appConnectionString, max: 1 });
    const own = new StreamNotifier(one, 10);
    try {
      own.touch();
      await expect.poll(() => received.length).toBe(1);
      const { rows } = await one.query<{ setting: string }>(`SELECT current_setting('synchronous_commit') AS setting`);
      expect(rows[0]!.setting).toBe("on");
    } finally {
      own.close();
      await one.end();
      await listener.query("UNLISTEN porter_stream");
      listener.release();
    }
  });
});
