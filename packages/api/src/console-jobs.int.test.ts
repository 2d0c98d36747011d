import { registerWorker, writeAudit } from "@porter/core";
import { controlPlane } from "@porter/core/testing/control-plane-factory";
import { useTestDatabase } from "@porter/db/testing/test-database";
import { beforeAll, describe, expect, it } from "vitest";
import { consoleCaller, enqueueMany, moveJobs, sessionOf } from "./testing/console";

// The jobs browser, the overview and the pools page, against jobs spread over both tables.
const db = useTestDatabase();
const viewer = () => consoleCaller(db.appPool, sessionOf("viewer"));
const operator = () => consoleCaller(db.appPool, sessionOf("operator"));

let ready: string[];
let retrying: string[];
let running: string[];
let dead: string[];
let succeeded: string[];
let otherTenant: string[];
let all: string[];

beforeAll(async () => {
  await controlPlane(db.pool, {
    pool: "jb-pool",
    queues: [{ id: "jb-a", concurrency_cap: 4 }, { id: "jb-b" }],
    tenants: [{ id: "jb_t1" }, { id: "jb_t2" }],
  });
  // One enqueue batch shares one created_at: the browser's order (job_id, UUIDv7) has no such ties.
  const batch = await enqueueMany(db.pool, 8, { jobType: "jb-a.job", tenantId: "jb_t1", key: "batch" });
  otherTenant = await enqueueMany(db.pool, 2, { jobType: "jb-b.job", tenantId: "jb_t2", key: "other" });
  ready = batch.slice(0, 2);
  retrying = batch.slice(2, 3);
  running = batch.slice(3, 4);
  dead = batch.slice(4, 6);
  succeeded = batch.slice(6, 8);
  await moveJobs(db.pool, retrying, "RETRY_WAIT");
  await moveJobs(db.pool, running, "RUNNING");
  await moveJobs(db.pool, dead, "DEAD");
  await moveJobs(db.pool, succeeded, "SUCCEEDED");
  all = [...batch, ...otherTenant];
});

const pageThrough = async (filter: Record<string, unknown>, limit: number) => {
  const seen: Array<{ job_id: string; created_at: string; state: string }> = [];
  let cursor: string | null = null;
  for (let pages = 0; pages < 50; pages++) {
    const page: Awaited<ReturnType<ReturnType<typeof viewer>["jobs"]["list"]>> = await viewer().jobs.list({ filter, cursor, limit });
    seen.push(...page.jobs);
    cursor = page.next_cursor;
    if (!cursor) break;
  }
  return seen;
};

describe("jobs.list", () => {
  it("pages through live and finished jobs together, newest first (job_id descending), each exactly once", async () => {
    const seen = await pageThrough({}, 3);
    const ids = seen.map((j) => j.job_id);
    expect([...ids].sort()).toEqual([...all].sort());
    expect(ids).toEqual([...ids].sort().reverse());
    const times = seen.map((j) => j.created_at);
    expect([...times].sort().reverse()).toEqual(times);
    expect(new Set(seen.map((j) => j.state))).toEqual(new Set(["READY", "RETRY_WAIT", "RUNNING", "DEAD", "SUCCEEDED"]));
  });

  it("filters by state (one table or both), queue, tenant, job id, idempotency key, trace id and time", async () => {
    const ids = async (filter: Record<string, unknown>) => (await pageThrough(filter, 2)).map((j) => j.job_id).sort();
    expect(await ids({ states: ["DEAD"] })).toEqual([...dead].sort());
    expect(await ids({ states: ["DEAD", "RETRY_WAIT"] })).toEqual([...dead, ...retrying].sort());
    expect(await ids({ queue_id: "jb-b" })).toEqual([...otherTenant].sort());
    expect(await ids({ tenant_id: "jb_t1", states: ["READY"] })).toEqual([...ready].sort());
    expect(await ids({ job_id: dead[0] })).toEqual([dead[0]]);
    expect(await ids({ idempotency_key: "other-1" })).toEqual([otherTenant[1]]);
    expect(await ids({ idempotency_key: "other-1", tenant_id: "jb_t2" })).toEqual([otherTenant[1]]);
    const job = await viewer().jobs.get({ job_id: succeeded[0]! });
    expect(await ids({ trace_id: job.trace_id })).toEqual([succeeded[0]]);
    expect(await ids({ from: new Date(Date.now() + 60_000).toISOString() })).toEqual([]);
    expect((await ids({ to: new Date(Date.now() + 60_000).toISOString() })).length).toBe(all.length);
  });

  it("shows a job's last error in the row (retry wait: the last attempt's; dead: the final one)", async () => {
    const rows = await pageThrough({ states: ["RETRY_WAIT", "DEAD"] }, 10);
    expect(rows.find((r) => r.job_id === retrying[0])).toMatchObject({ error_code: "E_FLAKY" });
    expect(rows.find((r) => r.job_id === dead[0])).toMatchObject({ error_code: "E_FIXTURE", error_message: "fixture failure" });
  });

  it("refuses a forged cursor (400)", async () => {
    await expect(viewer().jobs.list({ filter: {}, cursor: "not-a-cursor" })).rejects.toMatchObject({ code: "BAD_REQUEST" });
  });
});

describe("jobs.counts", () => {
  it("counts every state for the filter, whatever states the filter picks", async () => {
    const counts = await viewer().jobs.counts({ filter: { tenant_id: "jb_t1", states: ["DEAD"] } });
    expect(counts).toEqual({ READY: 2, RETRY_WAIT: 1, RUNNING: 1, SUCCEEDED: 2, DEAD: 2, CANCELLED: 0, EXPIRED: 0 });
  });
});

describe("bulk actions: dry run, then confirm", () => {
  it("redrive everything matching a filter: the dry run counts and changes nothing; the confirm redrives", async () => {
    const selection = { filter: { queue_id: "jb-a", states: ["DEAD" as const] } };
    // The fixtures' errors are permanent: a redrive takes them only when forced.
    const unforced = await operator().jobs.redrive({ selection, dry_run: true });
    expect(unforced).toMatchObject({ dry_run: true, eligible: 0, applied: 0, skipped: { permanent: 2 } });
    const dry = await operator().jobs.redrive({ selection, dry_run: true, force: true });
    expect(dry).toMatchObject({ dry_run: true, eligible: 2, total: 2, applied: 0, capped: false });
    expect((await viewer().jobs.counts({ filter: { queue_id: "jb-a" } })).DEAD).toBe(2);
    const done = await operator().jobs.redrive({ selection, dry_run: false, force: true, reason: "fixed" });
    expect(done).toMatchObject({ dry_run: false, applied: 2 });
    expect((await viewer().jobs.counts({ filter: { queue_id: "jb-a" } })).DEAD).toBe(0);
    const timeline = (await viewer().jobs.get({ job_id: dead[0]! })).timeline;
    expect(timeline.at(-1)).toMatchObject({ kind: "redriven", actor: "user:operator@example.com", data: { reason: "fixed" } });
  });

  it("a selection counts what it skips and why", async () => {
    const result = await operator().jobs.cancel({ selection: { job_ids: [ready[0]!, succeeded[0]!, "00000000-0000-4000-8000-000000000000"] }, dry_run: true });
    expect(result).toMatchObject({ eligible: 1, applied: 0, skipped: { "state SUCCEEDED": 1, "not found": 1 } });
  });

  it("cancel: queued jobs are cancelled at once, a running one gets a cancel request", async () => {
    const result = await operator().jobs.cancel({ selection: { job_ids: [ready[0]!, running[0]!] }, dry_run: false });
    expect(result).toMatchObject({ eligible: 2, applied: 2 });
    expect((await viewer().jobs.get({ job_id: ready[0]! })).status).toBe("CANCELLED");
    const stillRunning = await viewer().jobs.get({ job_id: running[0]! });
    expect(stillRunning).toMatchObject({ status: "RUNNING", cancel_requested: true });
    expect(stillRunning.timeline.map((e) => e.kind)).toContain("cancel_requested");
  });

  it("retry now applies to RETRY_WAIT only; everything-matching counts only eligible jobs", async () => {
    const dry = await operator().jobs.retry({ selection: { filter: { tenant_id: "jb_t1" } }, dry_run: true });
    expect(dry).toMatchObject({ eligible: 1, total: 1 });
    await operator().jobs.retry({ selection: { filter: { tenant_id: "jb_t1" } }, dry_run: false });
    const job = await viewer().jobs.get({ job_id: retrying[0]! });
    expect(new Date(job.run_at!).getTime()).toBeLessThanOrEqual(Date.now() + 1000);
    expect(job.timeline.at(-1)).toMatchObject({ kind: "retry_now", actor: "user:operator@example.com" });
  });
});

describe("jobs.get", () => {
  it("returns the envelope, the structured error, the timeline and the attempts (running one included)", async () => {
    const job = await viewer().jobs.get({ job_id: running[0]! });
    expect(job.attempts).toMatchObject([{ attempt: 1, worker_id: "fixture-worker", outcome: "running", finished_at: null }]);
    const done = await viewer().jobs.get({ job_id: succeeded[0]! });
    expect(done.attempts.map((a) => a.outcome)).toEqual(["succeeded"]);
    expect(done.result).toEqual({ ok: true });
    await expect(viewer().jobs.get({ job_id: "00000000-0000-4000-8000-000000000000" })).rejects.toMatchObject({ code: "NOT_FOUND" });
  });
});

describe("overview and pools", () => {
  it("per queue: counts by state, running vs cap, oldest ready age", async () => {
    const queues = await viewer().overview.queues();
    const a = queues.find((q) => q.queue_id === "jb-a")!;
    expect(a).toMatchObject({ pool_id: "jb-pool", concurrency_cap: 4, running: 1, paused: false });
    expect(a.counts.SUCCEEDED).toBe(2);
    expect(a.oldest_ready_age_s).not.toBeNull();
    expect(a.finished_last_5m).toBeGreaterThanOrEqual(2);
  });

  it("throughput per minute has one point per minute and counts recent completions", async () => {
    const points = await viewer().overview.throughput({ minutes: 10 });
    expect(points).toHaveLength(10);
    expect(points.reduce((n, p) => n + p.succeeded, 0)).toBe(2);
  });

  it("pools list their queues and workers: live, and lost after 30 s without a heartbeat", async () => {
    await registerWorker(db.pool, { id: "w-live", poolId: "jb-pool", host: "host-1", pid: 101, version: "1.0", concurrency: 8 });
    await registerWorker(db.pool, { id: "w-lost", poolId: "jb-pool", host: "host-2", pid: 102, version: "1.0", concurrency: 8 });
    await db.pool.query(`UPDATE workers SET heartbeat_at = now() - interval '2 minutes' WHERE id = 'w-lost'`);
    const [pool] = await viewer().pools.overview({});
    expect(pool!.queues.map((q) => q.id)).toEqual(["jb-a", "jb-b"]);
    expect(pool!.workers.map((w) => [w.id, w.host, w.pid, w.status])).toEqual([
      ["w-live", "host-1", 101, "live"],
      ["w-lost", "host-2", 102, "lost"],
    ]);
  });
});

describe("audit.list", () => {
  it("filters by object and action prefix, newest first, with a cursor", async () => {
    const first = await viewer().audit.list({ filter: { action: "job." }, limit: 2 });
    expect(first.entries).toHaveLength(2);
    expect(first.next_cursor).not.toBeNull();
    const second = await viewer().audit.list({ filter: { action: "job." }, limit: 2, cursor: first.next_cursor });
    expect(Number(second.entries[0]!.id)).toBeLessThan(Number(first.entries[1]!.id));
    const one = await viewer().audit.list({ filter: { object_type: "job", object_id: dead[0]! } });
    expect(one.entries.map((e) => e.action)).toEqual(["job.redrive"]);
  });

  it("takes the action prefix literally: _ and % are not wildcards", async () => {
    await writeAudit(db.pool, [
      { actor: "test", action: "lit_x.update", objectType: "lit", objectId: "1" },
      { actor: "test", action: "litYx.update", objectType: "lit", objectId: "2" },
      { actor: "test", action: "lit%z", objectType: "lit", objectId: "3" },
    ]);
    const actions = async (prefix: string) => (await viewer().audit.list({ filter: { action: prefix } })).entries.map((e) => e.action);
    expect(await actions("lit_")).toEqual(["lit_x.update"]);
    expect(await actions("lit%")).toEqual(["lit%z"]);
    expect((await actions("lit")).sort()).toEqual(["lit%z", "litYx.update", "lit_x.update"].sort());
  });
});
