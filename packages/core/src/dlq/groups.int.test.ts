import { spawn } from "node:child_process";
import { once } from "node:events";
import { fileURLToPath } from "node:url";
import type { TJobError } from "@porter/contracts";
import { useTestDatabase } from "@porter/db/testing/test-database";
import pg from "pg";
import { beforeAll, describe, expect, it } from "vitest";
import { type ClaimedJob, claimJobs } from "../sql/claim-jobs";
import { enqueueJobs } from "../sql/enqueue-jobs";
import { failJobs } from "../sql/fail-jobs";
import { pruneFinished } from "../sql/prune-finished";
import { redriveJobs } from "../sql/redrive-jobs";
import { rescueExpiredLeases } from "../sql/rescue-expired-leases";
import { controlPlane } from "../testing/control-plane-factory";

// Failure groups are maintained by the triggers of sql/routines/dlq.sql as jobs die through the
// real paths (failJobs, the rescue of expired leases), as the runtime role (what workers connect
// as): counts, dead_now, first/last seen, facets, hours, deaths, sample; releases on redrive and
// prune; exact counts under concurrent deaths from several connections and a separate process.
const db = useTestDatabase();
let seq = 0;

beforeAll(async () => {
  await controlPlane(db.pool, {
    pool: "gp",
    queues: [{ id: "gq1", retention_s: 60 }, { id: "gq2" }],
    jobTypes: [
      { id: "g.charge", queue: "gq1" },
      { id: "g.mail", queue: "gq2" },
    ],
    tenants: ["g_t1", "g_t2", "g_t3"],
  });
});

const error = (message: string, over: Partial<TJobError> = {}): TJobError => ({
  code: "HTTP_503",
  class: "permanent",
  message,
  worker_version: "w-1.0",
  attempt: 1,
  trace_id: "t",
  last_checkpoint: null,
  ...over,
});

/** Enqueues `n` jobs and claims exactly those (max_attempts 1), on the runtime role. */
const runningJobs = async (n: number, over: { job_type?: string; tenant?: (i: number) => string } = {}): Promise<ClaimedJob[]> => {
  const inputs = Array.from({ length: n }, (_, i) => ({
    job_type: over.job_type ?? "g.charge",
    tenant_id: over.tenant?.(i) ?? "g_t1",
    payload: { i },
    idempotency_key: `g-${++seq}`,
    max_attempts: 1,
  }));
  const enqueued = await enqueueJobs(db.appPool, inputs);
  const ids = new Set(enqueued.map((e) => e.job_id));
  const claimed: ClaimedJob[] = [];
  while (claimed.length < n) {
    const batch = await claimJobs(db.appPool, { poolId: "gp", workerId: `w-${seq}`, limit: n });
    if (batch.length === 0) throw new Error(`claimed ${claimed.length} of ${n}`);
    claimed.push(...batch.filter((c) => ids.has(c.jobId)));
  }
  return claimed;
};

const die = (
  jobs: ClaimedJob[],
  message: (j: ClaimedJob) => string,
  over: Partial<TJobError> = {},
  conn: pg.Pool | pg.PoolClient | pg.Client = db.appPool,
  now?: Date,
) =>
  failJobs(
    conn,
    jobs.map((j) => ({
      id: j.id,
      leaseToken: j.leaseToken,
      attempt: j.attempt,
      outcome: "failed" as const,
      error: error(message(j), over),
      next: { state: "DEAD" as const },
    })),
    now,
  );

const groupOf = async (jobId: string) =>
  (await db.pool.query(`SELECT g.* FROM dlq_groups g JOIN finished_jobs f ON f.dlq_fingerprint = g.fingerprint WHERE f.job_id = $1`, [jobId])).rows[0];
const facets = async (groupId: string) =>
  (await db.pool.query(`SELECT kind, value, count::int FROM dlq_group_facets WHERE group_id = $1 ORDER BY kind, value`, [groupId])).rows;

describe("failure groups as jobs die", () => {
  it("failJobs: one group per bug with count, dead_now, first/last seen, facets, hours, deaths and the latest sample", async () => {
    const jobs = await runningJobs(3, { tenant: (i) => (i < 2 ? "g_t1" : "g_t2") });
    const t0 = new Date("2026-11-30T10:15:00Z");
    await die([jobs[0]!], () => "GET https://api.example.com/orders/8812 failed: 503", {}, db.appPool, t0);
    await die(
      [jobs[1]!, jobs[2]!],
      (j) => `GET https://api.example.com/orders/${j.id} failed: 503`,
      { worker_version: "w-1.1" },
      db.appPool,
      new Date("2026-11-30T12:40:00Z"),
    );
    const g = await groupOf(jobs[0]!.jobId);
    expect(await groupOf(jobs[2]!.jobId)).toMatchObject({ id: g.id });
    expect(g).toMatchObject({
      job_type: "g.charge",
      error_code: "HTTP_503",
      error_class: "permanent",
      normalized_message: "GET <url> failed: <n>",
      count: "3",
      dead_now: "3",
      status: "new",
      is_regression: false,
    });
    expect(g.first_seen).toEqual(t0);
    expect(g.last_seen).toEqual(new Date("2026-11-30T12:40:00Z"));
    // The sample is the latest death; a tie (one statement) goes to the newest job (UUIDv7 order).
    expect(g.sample_job_id).toBe([jobs[1]!.jobId, jobs[2]!.jobId].sort().at(-1));
    expect(g.sample_message).toMatch(/^GET https:\/\/api\.example\.com\/orders\/\d+ failed: 503$/);
    expect(await facets(g.id)).toEqual([
      { kind: "queue", value: "gq1", count: 3 },
      { kind: "tenant", value: "g_t1", count: 2 },
      { kind: "tenant", value: "g_t2", count: 1 },
      { kind: "worker_version", value: "w-1.0", count: 1 },
      { kind: "worker_version", value: "w-1.1", count: 2 },
    ]);
    expect((await db.pool.query(`SELECT hour, deaths FROM dlq_group_hours WHERE group_id = $1 ORDER BY hour`, [g.id])).rows).toEqual([
      { hour: new Date("2026-11-30T10:00:00Z"), deaths: 1 },
      { hour: new Date("2026-11-30T12:00:00Z"), deaths: 2 },
    ]);
    expect((await db.pool.query(`SELECT job_id, queue_id, tenant_id FROM dlq_deaths WHERE group_id = $1 ORDER BY died_at, job_id`, [g.id])).rows).toHaveLength(
      3,
    );

    // A different error of the same job type is another group.
    const [other] = await runningJobs(1);
    await die([other!], () => 'duplicate key value violates unique constraint "orders_pkey"', { code: "DB_UNIQUE" });
    const g2 = await groupOf(other!.jobId);
    expect(g2.id).not.toBe(g.id);
    expect(g2).toMatchObject({ count: "1", dead_now: "1", error_code: "DB_UNIQUE" });
  });

  it("a retry is not a death: only DEAD rows are stamped and counted", async () => {
    const [job] = await runningJobs(1);
    await failJobs(db.appPool, [
      {
        id: job!.id,
        leaseToken: job!.leaseToken,
        attempt: job!.attempt,
        outcome: "failed",
        error: error("retry me"),
        next: { state: "RETRY_WAIT", runAt: new Date() },
      },
    ]);
    expect((await db.pool.query(`SELECT count(*)::int AS n FROM dlq_groups WHERE sample_message = 'retry me'`)).rows[0].n).toBe(0);
  });

  it("the rescue of an expired lease with its attempts exhausted lands in a LEASE_EXPIRED group", async () => {
    const jobs = await runningJobs(2, { job_type: "g.mail", tenant: (i) => (i === 0 ? "g_t2" : "g_t3") });
    const later = new Date(Date.now() + 3600_000);
    const out = await rescueExpiredLeases(db.appPool, { now: later });
    expect(out.dead).toBe(2);
    const g = await groupOf(jobs[0]!.jobId);
    expect(await groupOf(jobs[1]!.jobId)).toMatchObject({ id: g.id });
    expect(g).toMatchObject({ job_type: "g.mail", error_code: "LEASE_EXPIRED", error_class: "lease_expired", count: "2", dead_now: "2" });
    expect(g.last_seen).toEqual(later);
    expect(await facets(g.id)).toEqual([
      { kind: "queue", value: "gq2", count: 2 },
      { kind: "tenant", value: "g_t2", count: 1 },
      { kind: "tenant", value: "g_t3", count: 1 },
      { kind: "worker_version", value: "unknown", count: 2 },
    ]);
  });

  it("a redrive and the retention of dead rows lower dead_now, not count", async () => {
    const jobs = await runningJobs(3);
    await die(jobs, () => "redrive me 42");
    const g = await groupOf(jobs[0]!.jobId);
    expect(g).toMatchObject({ count: "3", dead_now: "3" });
    const out = await redriveJobs(db.appPool, { jobIds: [jobs[0]!.jobId], actor: "test:groups" });
    expect(out.redriven).toEqual([jobs[0]!.jobId]);
    const after = await db.pool.query(`SELECT count::int, dead_now::int FROM dlq_groups WHERE id = $1`, [g.id]);
    expect(after.rows[0]).toEqual({ count: 3, dead_now: 2 });
    // Retention: DEAD rows are kept by pruneFinished; a dead row deleted another way (an operator's
    // purge) lowers dead_now the same.
    await pruneFinished(db.pool, { now: new Date(Date.now() + 365 * 86400_000) });
    expect((await db.pool.query(`SELECT dead_now::int FROM dlq_groups WHERE id = $1`, [g.id])).rows[0].dead_now).toBe(2);
    await db.pool.query(`DELETE FROM finished_jobs WHERE job_id = $1`, [jobs[1]!.jobId]);
    expect((await db.pool.query(`SELECT count::int, dead_now::int FROM dlq_groups WHERE id = $1`, [g.id])).rows[0]).toEqual({ count: 3, dead_now: 1 });
  });
});

describe("concurrent deaths", () => {
  it("one fingerprint from four connections and a separate process at once: exact count and dead_now, no deadlock", async () => {
    const jobs = await runningJobs(100, { tenant: (i) => ["g_t1", "g_t2", "g_t3"][i % 3]! });
    const msg = (j: { id: string }) => `upstream 502 for order ${j.id} after 30000ms`;
    const child = jobs.slice(80).map((j) => ({ id: j.id, leaseToken: j.leaseToken, attempt: j.attempt, message: msg(j), code: "UPSTREAM" }));
    const clients = await Promise.all(
      Array.from({ length: 4 }, async () => {
        const c = new pg.Client({ connectionString: db.appConnectionString });
        await c.connect();
        return c;
      }),
    );
    try {
      const script = fileURLToPath(new URL("../testing/fail-jobs-process.ts", import.meta.url));
      const proc = spawn("npx", ["tsx", script, db.appConnectionString, JSON.stringify(child)], { stdio: ["pipe", "pipe", "inherit"] });
      let stdout = "";
      proc.stdout.setEncoding("utf8");
      const ready = new Promise<void>((resolve) =>
        proc.stdout.on("data", (chunk: string) => {
          stdout += chunk;
          if (stdout.includes("ready\n")) resolve();
        }),
      );
      const exited = once(proc, "exit");
      await ready;
      // Go: the process and the four connections start together; each connection fails its 20
      // jobs one statement at a time, as workers ack, interleaved with the others.
      proc.stdin.end("go\n");
      await Promise.all(
        clients.map(async (c, k) => {
          for (const j of jobs.slice(k * 20, k * 20 + 20)) await die([j], msg, { code: "UPSTREAM" }, c);
        }),
      );
      const [code] = await exited;
      expect(code).toBe(0);
      expect(JSON.parse(stdout.trim().split("\n").at(-1)!)).toEqual({ failed: 20 });
    } finally {
      await Promise.all(clients.map((c) => c.end()));
    }
    const g = await groupOf(jobs[0]!.jobId);
    expect(g).toMatchObject({ count: "100", dead_now: "100" });
    expect(
      (await db.pool.query(`SELECT count(*)::int AS n FROM dlq_groups WHERE normalized_message = 'upstream <n> for order <n> after <n>ms'`)).rows[0].n,
    ).toBe(1);
    expect(await facets(g.id)).toEqual([
      { kind: "queue", value: "gq1", count: 100 },
      { kind: "tenant", value: "g_t1", count: 34 },
      { kind: "tenant", value: "g_t2", count: 33 },
      { kind: "tenant", value: "g_t3", count: 33 },
      { kind: "worker_version", value: "child-1", count: 20 },
      { kind: "worker_version", value: "w-1.0", count: 80 },
    ]);
    expect((await db.pool.query(`SELECT sum(deaths)::int AS n FROM dlq_group_hours WHERE group_id = $1`, [g.id])).rows[0].n).toBe(100);
    expect((await db.pool.query(`SELECT count(*)::int AS n FROM dlq_deaths WHERE group_id = $1`, [g.id])).rows[0].n).toBe(100);
  });

  it("two fingerprints interleaved in batches from several connections (opposite orders): no deadlock, exact counts", async () => {
    const jobs = await runningJobs(120, { tenant: (i) => (i % 2 ? "g_t1" : "g_t2") });
    // Batches mix both bugs, and half the connections list them in the opposite order: the
    // trigger's upserts lock group rows in fingerprint order whatever the batch's order.
    const msg = (j: ClaimedJob) => (Number(j.id) % 2 ? `alpha failure ${j.id}` : `beta failure ${j.id}`);
    const clients = await Promise.all(
      Array.from({ length: 4 }, async () => {
        const c = new pg.Client({ connectionString: db.appConnectionString });
        await c.connect();
        return c;
      }),
    );
    try {
      await Promise.all(
        clients.map(async (c, k) => {
          const mine = jobs.slice(k * 30, k * 30 + 30);
          if (k % 2) mine.reverse();
          for (let i = 0; i < mine.length; i += 6) await die(mine.slice(i, i + 6), msg, { code: "MIXED" }, c);
        }),
      );
    } finally {
      await Promise.all(clients.map((c) => c.end()));
    }
    const { rows } = await db.pool.query(
      `SELECT normalized_message, count::int, dead_now::int FROM dlq_groups WHERE error_code = 'MIXED' ORDER BY normalized_message`,
    );
    const alpha = jobs.filter((j) => Number(j.id) % 2).length;
    expect(rows).toEqual([
      { normalized_message: "alpha failure <n>", count: alpha, dead_now: alpha },
      { normalized_message: "beta failure <n>", count: 120 - alpha, dead_now: 120 - alpha },
    ]);
  });
});

describe("regression reopen", () => {
  const setStatus = (id: string, sql: string) => db.pool.query(`UPDATE dlq_groups SET ${sql} WHERE id = $1`, [id]);
  const reopenedEvents = async (id: string) =>
    (await db.pool.query(`SELECT kind, actor, data FROM dlq_events WHERE group_id = $1 AND kind = 'reopened' ORDER BY id`, [id])).rows;
  const groupRow = async (id: string) =>
    (
      await db.pool.query(
        `SELECT status::text, is_regression, reopened_at IS NOT NULL AS reopened, ignore_remaining, ignored_until FROM dlq_groups WHERE id = $1`,
        [id],
      )
    ).rows[0];
  /** A group with one death of a message of its own; returns its id. */
  const freshGroup = async (name: string) => {
    const [job] = await runningJobs(1);
    await die([job!], () => `regression ${name} 1`, { code: "REG" });
    return (await groupOf(job!.jobId)).id as string;
  };
  const dieInto = async (name: string, n = 1) => die(await runningJobs(n), () => `regression ${name} 99`, { code: "REG" });

  it("a resolved group that gets a new death is new again, flagged as a regression, with a reopened event", async () => {
    const id = await freshGroup("resolved");
    await setStatus(id, `status = 'resolved'`);
    await dieInto("resolved");
    expect(await groupRow(id)).toMatchObject({ status: "new", is_regression: true, reopened: true });
    expect(await reopenedEvents(id)).toEqual([{ kind: "reopened", actor: "system:dlq", data: { regression: true } }]);
    // Further deaths of the reopened group do not reopen it again.
    await dieInto("resolved");
    expect(await reopenedEvents(id)).toHaveLength(1);
  });

  it("two death statements in one transaction reopen a resolved group once", async () => {
    const id = await freshGroup("twice");
    await setStatus(id, `status = 'resolved'`);
    const jobs = await runningJobs(2);
    const client = await db.appPool.connect();
    try {
      await client.query("BEGIN");
      await die([jobs[0]!], () => "regression twice 5", { code: "REG" }, client);
      await die([jobs[1]!], () => "regression twice 6", { code: "REG" }, client);
      await client.query("COMMIT");
    } finally {
      client.release();
    }
    expect(await groupRow(id)).toMatchObject({ status: "new", is_regression: true });
    expect(await reopenedEvents(id)).toHaveLength(1);
  });

  it("ignored until a past time reopens on the next death; until a future time stays ignored", async () => {
    const past = await freshGroup("past");
    await setStatus(past, `status = 'ignored', ignored_until = now() - interval '1 minute'`);
    await dieInto("past");
    expect(await groupRow(past)).toMatchObject({ status: "new", is_regression: true, ignored_until: null });
    expect(await reopenedEvents(past)).toHaveLength(1);

    const future = await freshGroup("future");
    await setStatus(future, `status = 'ignored', ignored_until = now() + interval '1 day'`);
    await dieInto("future", 3);
    expect(await groupRow(future)).toMatchObject({ status: "ignored", is_regression: false, reopened: false });
    expect(await reopenedEvents(future)).toEqual([]);
  });

  it("ignored for N more deaths counts down and reopens on the Nth", async () => {
    const id = await freshGroup("more");
    await setStatus(id, `status = 'ignored', ignore_remaining = 3`);
    await dieInto("more");
    expect(await groupRow(id)).toMatchObject({ status: "ignored", ignore_remaining: 2, is_regression: false });
    await dieInto("more");
    expect(await groupRow(id)).toMatchObject({ status: "ignored", ignore_remaining: 1 });
    await dieInto("more");
    expect(await groupRow(id)).toMatchObject({ status: "new", ignore_remaining: null, is_regression: true });
    expect(await reopenedEvents(id)).toHaveLength(1);
  });

  it("ignored for N more, with a batch of deaths passing N at once, reopens", async () => {
    const id = await freshGroup("batch");
    await setStatus(id, `status = 'ignored', ignore_remaining = 2`);
    await dieInto("batch", 5);
    expect(await groupRow(id)).toMatchObject({ status: "new", is_regression: true });
  });
});
