import { useTestDatabase } from "@porter/db/testing/test-database";
import { beforeAll, describe, expect, it } from "vitest";
import { getJob } from "../reads/get-job";
import { enqueueJobs } from "../sql/enqueue-jobs";
import { redriveJobs } from "../sql/redrive-jobs";
import { controlPlane } from "../testing/control-plane-factory";
import { killJobs, redriveTableCounts } from "../testing/dead-jobs";
import { stateOf } from "../testing/fixtures";
import { planRedrive } from "./redrive-plan";
import { getRedrive } from "./redrive-read";
import { abortRedrive, advanceRedrive, advanceRedrives, createRedrive } from "./redrive-runner";

// Durable redrives (issue 12, deliverable 3): the eligibility matrix in the dry run and in real
// runs, the frozen cutoff, velocity, abort, lineage. The crash test is redrive-crash.int.test.ts.

const db = useTestDatabase();

/** A queue of its own pool (so each test's claims see only its own jobs). */
const queue = async (name: string): Promise<{ jobType: string; pool: string }> => {
  await controlPlane(db.pool, { pool: `p_${name}`, queues: [{ id: name, lease_seconds: 30, max_runtime_s: 60 }], tenants: ["tenant_A", "tenant_B"] });
  return { jobType: `${name}.job`, pool: `p_${name}` };
};

const items = async (redriveId: string) =>
  (
    await db.pool.query<{ job_id: string; state: string; reason: string | null; done_at: Date | null }>(
      `SELECT job_id::text, state, reason, done_at FROM redrive_items WHERE redrive_id = $1 ORDER BY job_id`,
      [redriveId],
    )
  ).rows;

const sum = (o: Record<string, number>) => Object.values(o).reduce((a, b) => a + b, 0);

describe("the eligibility matrix", () => {
  let ids: Record<"eligible1" | "eligible2" | "expired" | "partial" | "permanent" | "overQuota" | "already" | "tenantGone", string>;
  let all: string[];

  beforeAll(async () => {
    const { jobType, pool } = await queue("mx");
    await controlPlane(db.pool, { pool: "p_backlog", queues: [{ id: "backlog" }], tenants: [{ id: "tenant_Q", backlog_cap: 1 }, "tenant_G"] });
    const [eligible1, eligible2] = await killJobs(db.pool, 2, { jobType }, pool);
    const [expired] = await killJobs(db.pool, 1, { jobType, isExpired: true }, pool);
    const [partial] = await killJobs(db.pool, 1, { jobType, isPartial: true }, pool);
    const [permanent] = await killJobs(db.pool, 1, { jobType, code: "INVALID_PAYLOAD", errorClass: "permanent" }, pool);
    const [overQuota] = await killJobs(db.pool, 1, { jobType, tenantId: "tenant_Q" }, pool);
    const [tenantGone] = await killJobs(db.pool, 1, { jobType, tenantId: "tenant_G" }, pool);
    const [already] = await killJobs(db.pool, 1, { jobType }, pool);
    // tenant_Q's backlog is full (cap 1, one job waiting); tenant_G is deleted; `already` was redriven.
    await enqueueJobs(db.pool, [{ job_type: "backlog.job", tenant_id: "tenant_Q", payload: {}, idempotency_key: "backlog-1" }]);
    await db.pool.query(`DELETE FROM tenants WHERE id = 'tenant_G'`);
    expect((await redriveJobs(db.pool, { jobIds: [already!], actor: "test" })).redriven).toEqual([already]);
    ids = {
      eligible1: eligible1!,
      eligible2: eligible2!,
      expired: expired!,
      partial: partial!,
      permanent: permanent!,
      overQuota: overQuota!,
      already: already!,
      tenantGone: tenantGone!,
    };
    all = Object.values(ids);
  });

  const reasons = (jobs: Array<{ job_id: string; reason: string | null }>) => Object.fromEntries(jobs.map((j) => [j.job_id, j.reason]));

  it("dry run: one verdict per job, counts per reason, and nothing changes (every table's row count)", async () => {
    const before = await redriveTableCounts(db.pool);
    const plan = await planRedrive(db.pool, { selection: { job_ids: all } });
    expect(reasons(plan.jobs)).toEqual({
      [ids.eligible1]: null,
      [ids.eligible2]: null,
      [ids.expired]: "expired",
      [ids.partial]: "partial",
      [ids.permanent]: "permanent",
      [ids.overQuota]: "over_quota",
      [ids.tenantGone]: "over_quota",
      [ids.already]: "already",
    });
    expect(plan.eligible).toEqual([ids.eligible1, ids.eligible2].sort());
    expect(plan.skipped).toEqual({ expired: 1, partial: 1, permanent: 1, over_quota: 2, already: 1 });

    const forced = await planRedrive(db.pool, { selection: { job_ids: all }, force: true });
    expect(forced.eligible).toEqual([ids.eligible1, ids.eligible2, ids.expired, ids.partial, ids.permanent].sort());
    expect(forced.skipped).toEqual({ expired: 0, partial: 0, permanent: 0, over_quota: 2, already: 1 });
    expect(await redriveTableCounts(db.pool)).toEqual(before);
  });

  it("real run without force: the eligible ones move, the rest are skipped with the dry run's reasons", async () => {
    const created = await createRedrive(db.pool, { selection: { job_ids: all }, actor: "alice", reason: "fixed upstream" });
    expect(created).toMatchObject({ status: "running", total: 8, redriven: 0, skipped: { already: 1 }, force: false, rate_per_s: 50 });
    await advanceRedrives(db.pool);
    const done = (await getRedrive(db.pool, created.redrive_id))!;
    expect(done).toMatchObject({ status: "completed", total: 8, redriven: 2, progress: 1, eta_s: null });
    expect(done.skipped).toEqual({ expired: 1, partial: 1, permanent: 1, over_quota: 2, already: 1 });
    expect(done.total).toBe(done.redriven + sum(done.skipped));
    expect(reasons(await items(created.redrive_id))).toEqual({
      [ids.eligible1]: null,
      [ids.eligible2]: null,
      [ids.expired]: "expired",
      [ids.partial]: "partial",
      [ids.permanent]: "permanent",
      [ids.overQuota]: "over_quota",
      [ids.tenantGone]: "over_quota",
      [ids.already]: "already",
    });
    expect(await stateOf(db.pool, ids.eligible1)).toBe("READY");
    for (const id of [ids.expired, ids.partial, ids.permanent, ids.overQuota, ids.tenantGone]) expect(await stateOf(db.pool, id)).toBe("DEAD");
    const audit = await db.pool.query(`SELECT actor, reason, after FROM audit_log WHERE action = 'redrive.create' AND object_id = $1`, [created.redrive_id]);
    expect(audit.rows).toEqual([{ actor: "alice", reason: "fixed upstream", after: expect.objectContaining({ total: 8, already: 1 }) }]);
  });

  it("real run with force: expired (deadline cleared), partial and permanent go too; never over quota or already", async () => {
    const created = await createRedrive(db.pool, { selection: { job_ids: all }, force: true, actor: "alice" });
    // The two moved by the first run are `already` now, skipped up front.
    expect(created).toMatchObject({ total: 8, skipped: { already: 3 } });
    await advanceRedrives(db.pool);
    const done = (await getRedrive(db.pool, created.redrive_id))!;
    expect(done).toMatchObject({ status: "completed", redriven: 3, skipped: { expired: 0, partial: 0, permanent: 0, over_quota: 2, already: 3 } });
    for (const id of [ids.expired, ids.partial, ids.permanent]) expect(await stateOf(db.pool, id)).toBe("READY");
    const { rows } = await db.pool.query(`SELECT deadline_at FROM jobs WHERE job_id = $1`, [ids.expired]);
    expect(rows[0].deadline_at).toBeNull();
    for (const id of [ids.overQuota, ids.tenantGone]) expect(await stateOf(db.pool, id)).toBe("DEAD");
  });
});

describe("selection and cutoff", () => {
  it("a redrive's job set is frozen at its cutoff: a job dying after it is not in it", async () => {
    const { jobType, pool } = await queue("cut");
    const before = await killJobs(db.pool, 3, { jobType, code: "CUT" }, pool);
    const created = await createRedrive(db.pool, { selection: { filter: { queue_id: "cut", error_code: "CUT" } }, ratePerS: 1, actor: "bob" });
    expect(created.total).toBe(3);
    const later = await killJobs(db.pool, 2, { jobType, code: "CUT" }, pool);
    expect((await items(created.redrive_id)).map((i) => i.job_id)).toEqual(before);
    // Drive it to the end (rate 1/s: a moved clock).
    const t0 = Date.now();
    for (let s = 1; s <= 5; s++) await advanceRedrive(db.pool, { id: created.redrive_id, now: new Date(t0 + s * 1000) });
    expect(await getRedrive(db.pool, created.redrive_id)).toMatchObject({ status: "completed", redriven: 3 });
    for (const id of later) expect(await stateOf(db.pool, id)).toBe("DEAD");
    // A job that died again after the cutoff is `already` for a redrive frozen before its new death.
    const plan = await planRedrive(db.pool, { selection: { filter: { queue_id: "cut" } } });
    expect(plan.eligible).toEqual(later);
  });

  it("a filter's from/to with any ISO 8601 offset works (PostgreSQL alone refuses offsets past ±15:59)", async () => {
    const { jobType, pool } = await queue("offsets");
    const dead = await killJobs(db.pool, 2, { jobType, code: "OFFSET" }, pool);
    // 1970-01-01T00:00-23:59 is 1970-01-01T23:59Z; 9999-12-31T00:00+14:00 is 9999-12-30T10:00Z.
    const plan = await planRedrive(db.pool, {
      selection: { filter: { queue_id: "offsets", from: "1970-01-01T00:00:00-23:59", to: "9999-12-31T00:00:00+23:59" } },
    });
    expect(plan.eligible).toEqual(dead);
  });

  it("a failure group's redrive takes the group's dead jobs and goes on the group's thread", async () => {
    const { jobType, pool } = await queue("grp");
    const mine = await killJobs(db.pool, 3, { jobType, code: "GRP", message: "order 1234 failed at https://api.example.com/x/99" }, pool);
    await killJobs(db.pool, 1, { jobType, code: "OTHER" }, pool);
    const { rows } = await db.pool.query<{ id: string }>(`SELECT id::text FROM dlq_groups WHERE job_type = $1 AND error_code = 'GRP'`, [jobType]);
    const groupId = rows[0]!.id;
    const plan = await planRedrive(db.pool, { selection: { group_id: groupId } });
    expect(plan.eligible).toEqual(mine);
    const created = await createRedrive(db.pool, { selection: { group_id: groupId }, actor: "carol", reason: "deployed the fix" });
    const thread = await db.pool.query(`SELECT actor, kind, body, data FROM dlq_events WHERE group_id = $1`, [groupId]);
    expect(thread.rows).toEqual([
      { actor: "carol", kind: "redrive", body: "deployed the fix", data: expect.objectContaining({ redrive_id: created.redrive_id, total: 3 }) },
    ]);
    await advanceRedrives(db.pool);
    const { rows: g } = await db.pool.query(`SELECT dead_now FROM dlq_groups WHERE id = $1`, [groupId]);
    expect(Number(g[0].dead_now)).toBe(0);
  });

  it("refuses bad selections with a 4xx and stores nothing", async () => {
    const before = await redriveTableCounts(db.pool);
    await expect(createRedrive(db.pool, { selection: { group_id: "999999" }, actor: "x" })).rejects.toMatchObject({ code: "NOT_FOUND" });
    await expect(createRedrive(db.pool, { selection: { filter: {} }, actor: "x" })).rejects.toMatchObject({ code: "BAD_REQUEST" });
    await expect(createRedrive(db.pool, { selection: { filter: { queue_id: "nothing-dead-here" } }, actor: "x" })).rejects.toMatchObject({
      code: "BAD_REQUEST",
    });
    await expect(createRedrive(db.pool, { selection: { filter: { queue_id: "cut" } }, ratePerS: 0, actor: "x" })).rejects.toMatchObject({
      code: "BAD_REQUEST",
    });
    expect(await redriveTableCounts(db.pool)).toEqual(before);
  });

  it("a job pending in a running redrive is `already` for another one", async () => {
    const { jobType, pool } = await queue("twice");
    const jobs = await killJobs(db.pool, 2, { jobType }, pool);
    const first = await createRedrive(db.pool, { selection: { job_ids: jobs }, ratePerS: 1, actor: "a" });
    const second = await createRedrive(db.pool, { selection: { job_ids: jobs }, actor: "b" });
    expect(second).toMatchObject({ status: "completed", total: 2, skipped: { already: 2 } });
    expect((await planRedrive(db.pool, { selection: { job_ids: jobs } })).skipped.already).toBe(2);
    await abortRedrive(db.pool, { id: first.redrive_id, actor: "a" });
    // Aborted: its pending items no longer hold the jobs.
    expect((await planRedrive(db.pool, { selection: { job_ids: jobs } })).eligible).toEqual(jobs);
  });
});

describe("concurrency", () => {
  it("two redrives asked at once over the same jobs: one holds each job, the other skips it as `already`; concurrent runners move each once", async () => {
    const { jobType, pool } = await queue("conc");
    const jobs = await killJobs(db.pool, 40, { jobType }, pool);
    const [a, b] = await Promise.all([
      createRedrive(db.pool, { selection: { job_ids: jobs }, ratePerS: 1000, actor: "a" }),
      createRedrive(db.pool, { selection: { job_ids: jobs }, ratePerS: 1000, actor: "b" }),
    ]);
    expect([a!.skipped.already, b!.skipped.already].sort((x, y) => x - y)).toEqual([0, 40]);
    // Four runners at once (as if two leaders overlapped): each job moved exactly once.
    await Promise.all([1, 2, 3, 4].map(() => advanceRedrives(db.pool)));
    for (let i = 0; i < 5; i++) await advanceRedrives(db.pool);
    const { rows } = await db.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM job_events WHERE kind = 'redriven' AND job_id = ANY($1::uuid[]) GROUP BY job_id`,
      [jobs],
    );
    expect(rows).toHaveLength(40);
    expect(rows.every((r) => r.n === 1)).toBe(true);
    const holder = a!.skipped.already === 0 ? a! : b!;
    expect(await getRedrive(db.pool, holder.redrive_id)).toMatchObject({ status: "completed", redriven: 40 });
  });
});

describe("velocity", () => {
  it("holds the rate: redriven per any 10 s window ≤ rate × 10 + one batch, and reaches it", async () => {
    const { jobType, pool } = await queue("vel");
    const jobs = [...(await killJobs(db.pool, 120, { jobType }, pool)), ...(await killJobs(db.pool, 120, { jobType }, pool))];
    const t0 = new Date();
    const created = await createRedrive(db.pool, { selection: { job_ids: jobs }, ratePerS: 20, actor: "vel", now: t0 });
    // The maintenance leader ticks about every second; here every 100 ms of a moved clock, 15 s long.
    for (let ms = 100; ms <= 15_000; ms += 100) await advanceRedrives(db.pool, { now: new Date(t0.getTime() + ms) });
    expect(await getRedrive(db.pool, created.redrive_id)).toMatchObject({ status: "completed", redriven: 240 });
    const done = (await items(created.redrive_id)).map((i) => i.done_at!.getTime()).sort((a, b) => a - b);
    let worst = 0;
    for (const start of done) worst = Math.max(worst, done.filter((t) => t >= start && t < start + 10_000).length);
    expect(worst).toBeLessThanOrEqual(20 * 10 + 20);
    expect(worst).toBeGreaterThanOrEqual(20 * 10); // the limit is reached, not just respected
    // 240 jobs: one batch of 20 at once, then 20/s: 11 s.
    expect(done.at(-1)! - t0.getTime()).toBeGreaterThanOrEqual(10_900);
    expect(done.at(-1)! - t0.getTime()).toBeLessThanOrEqual(11_200);
  });

  it("holds it with the real clock too (rate 20/s, driven in a loop for ~6 s)", async () => {
    const { jobType, pool } = await queue("velreal");
    const jobs = await killJobs(db.pool, 140, { jobType }, pool);
    const created = await createRedrive(db.pool, { selection: { job_ids: jobs }, ratePerS: 20, actor: "vel" });
    const started = Date.now();
    while (Date.now() - started < 9_000) {
      const r = await getRedrive(db.pool, created.redrive_id);
      if (r?.status !== "running") break;
      await advanceRedrives(db.pool);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const r = (await getRedrive(db.pool, created.redrive_id))!;
    expect(r).toMatchObject({ status: "completed", redriven: 140 });
    const done = (await items(created.redrive_id)).map((i) => i.done_at!.getTime()).sort((a, b) => a - b);
    // 140 = 20 at once + 120 at 20/s: at least 6 s from the first to the last.
    expect(done.at(-1)! - done[0]!).toBeGreaterThanOrEqual(5_900);
    for (const start of done) expect(done.filter((t) => t >= start && t < start + 5_000).length).toBeLessThanOrEqual(20 * 5 + 20);
  });
});

describe("abort", () => {
  it("stops within one batch: it waits for the batch in flight, and no batch runs after it", async () => {
    const { jobType, pool } = await queue("abort");
    const jobs = await killJobs(db.pool, 30, { jobType }, pool);
    const t0 = new Date();
    const created = await createRedrive(db.pool, { selection: { job_ids: jobs }, ratePerS: 5, actor: "op", now: t0 });
    expect(await advanceRedrive(db.pool, { id: created.redrive_id, now: new Date(t0.getTime() + 100) })).toMatchObject({ redriven: 5 });

    // A batch in flight holds the redrive's row; the abort waits for it.
    const inFlight = await db.pool.connect();
    try {
      await inFlight.query("BEGIN");
      await inFlight.query(`SELECT 1 FROM redrives WHERE id = $1 FOR UPDATE`, [created.redrive_id]);
      let isAborted = false;
      const abort = abortRedrive(db.pool, { id: created.redrive_id, actor: "op", reason: "wrong fix" }).then((r) => {
        isAborted = true;
        return r;
      });
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(isAborted).toBe(false);
      // Meanwhile another runner skips the locked row (no second batch runs concurrently).
      expect(await advanceRedrive(db.pool, { id: created.redrive_id, now: new Date(t0.getTime() + 1100) })).toBeNull();
      await inFlight.query("COMMIT");
      expect(await abort).toMatchObject({ status: "aborted", aborted_by: "op", redriven: 5, eta_s: null });
    } finally {
      inFlight.release();
    }
    for (let s = 2; s < 10; s++) await advanceRedrives(db.pool, { now: new Date(t0.getTime() + s * 1000) });
    expect(await getRedrive(db.pool, created.redrive_id)).toMatchObject({ status: "aborted", redriven: 5 });
    expect((await items(created.redrive_id)).filter((i) => i.state === "pending")).toHaveLength(25);
    const audit = await db.pool.query(`SELECT actor, reason FROM audit_log WHERE action = 'redrive.abort' AND object_id = $1`, [created.redrive_id]);
    expect(audit.rows).toEqual([{ actor: "op", reason: "wrong fix" }]);
    await expect(abortRedrive(db.pool, { id: created.redrive_id, actor: "op" })).rejects.toMatchObject({ code: "CONFLICT" });
    await expect(abortRedrive(db.pool, { id: "00000000-0000-4000-8000-000000000000", actor: "op" })).rejects.toMatchObject({ code: "NOT_FOUND" });
  });
});

describe("lineage", () => {
  it("the timeline of a redriven job shows the redrive_id, the attempts before it and the group", async () => {
    const { jobType, pool } = await queue("lin");
    const [job] = await killJobs(db.pool, 1, { jobType, code: "LIN" }, pool);
    const created = await createRedrive(db.pool, { selection: { job_ids: [job!] }, actor: "dave", reason: "retry after fix" });
    await advanceRedrives(db.pool);
    const { rows } = await db.pool.query<{ id: string }>(`SELECT id::text FROM dlq_groups WHERE job_type = $1`, [jobType]);
    const timeline = (await getJob(db.pool, job!))!.timeline;
    expect(timeline.filter((e) => e.kind === "redriven")).toEqual([
      expect.objectContaining({
        kind: "redriven",
        actor: "dave",
        data: { redrive_id: created.redrive_id, attempts_before: 1, group_id: rows[0]!.id, reason: "retry after fix", forced: false },
      }),
    ]);
    const { rows: job_ } = await db.pool.query(`SELECT state, attempt, redrive_count FROM jobs WHERE job_id = $1`, [job]);
    expect(job_[0]).toEqual({ state: "READY", attempt: 0, redrive_count: 1 });
  });
});
