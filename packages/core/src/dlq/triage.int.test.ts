import { AppError } from "@porter/contracts";
import { useTestDatabase } from "@porter/db/testing/test-database";
import { beforeAll, describe, expect, it } from "vitest";
import { getJob } from "../reads/get-job";
import { redriveJobs } from "../sql/redrive-jobs";
import { controlPlane } from "../testing/control-plane-factory";
import { killJobs, prepareDeaths } from "../testing/dlq-fixtures";
import { pruneDlq } from "./prune";
import { dlqErrorCodes, getDlqGroup, listDlqGroupJobs, listDlqGroups } from "./reads";
import { listReasonCodes, triageGroup, triageJob, upsertReasonCode } from "./triage";

// Triage through Prisma as the runtime role (what the console and the CLI use): owner, status,
// reason code and notes, each on the group's thread and audited; bad input changes nothing. Then
// the reads (list, detail, jobs, error codes), the job timeline and the pruning of history.
const db = useTestDatabase();
const ALICE = "u_alice";
const BOB = "u_bob";

beforeAll(async () => {
  await controlPlane(db.pool, {
    pool: "tp",
    queues: [{ id: "tq1" }, { id: "tq2" }],
    jobTypes: [
      { id: "t.charge", queue: "tq1" },
      { id: "t.mail", queue: "tq2" },
    ],
    tenants: ["tenant_A", "tt1", "tt2", "tt3", "tt4", "tt5", "tt6"],
  });
  await db.pool.query(
    `INSERT INTO users (id, email, name, password_hash, role, disabled_at) VALUES
       ('u_alice', 'alice@example.com', 'Alice', 'x', 'operator', NULL),
       ('u_bob', 'bob@example.com', 'Bob', 'x', 'viewer', NULL),
       ('u_carol', 'carol@example.com', 'Carol', 'x', 'operator', now())`,
  );
});

const group = (id: string) => db.pool.query(`SELECT * FROM dlq_groups WHERE id = $1`, [id]).then((r) => r.rows[0]);
const thread = (id: string) => db.pool.query(`SELECT kind, actor, body, data FROM dlq_events WHERE group_id = $1 ORDER BY id`, [id]).then((r) => r.rows);
const audits = (objectId: string) =>
  db.pool.query(`SELECT actor, action, before, after FROM audit_log WHERE object_id = $1 ORDER BY id`, [objectId]).then((r) => r.rows);
const fresh = async (name: string, n = 1) =>
  (await killJobs(db.appPool, { poolId: "tp", jobType: "t.charge", n, message: (i) => `triage ${name} ${i}`, error: { code: `E_${name.toUpperCase()}` } }))
    .groupIds[0]!;
const refused = async (p: Promise<unknown>, code = "BAD_REQUEST") => {
  const error = await p.catch((e: unknown) => e);
  expect(error).toBeInstanceOf(AppError);
  expect((error as AppError).code).toBe(code);
  return (error as AppError).message;
};

describe("triageGroup", () => {
  it("assigns by e-mail, id or me, sets status and reason, adds a note: one event per change and one audit row per call", async () => {
    const id = await fresh("assign");
    await triageGroup(db.appPrisma, {
      id,
      owner: "Alice@Example.com",
      status: "investigating",
      reason_code: "dependency_outage",
      note: "Stripe is down",
      actor: "user:alice@example.com",
    });
    expect(await group(id)).toMatchObject({ owner_id: ALICE, status: "investigating", reason_code: "dependency_outage" });
    expect(await thread(id)).toEqual([
      { kind: "assigned", actor: "user:alice@example.com", body: "assigned to alice@example.com", data: { from: null, to: "alice@example.com" } },
      { kind: "reason", actor: "user:alice@example.com", body: "reason dependency_outage", data: { from: null, to: "dependency_outage" } },
      { kind: "status", actor: "user:alice@example.com", body: "new → investigating", data: { from: "new", to: "investigating" } },
      { kind: "note", actor: "user:alice@example.com", body: "Stripe is down", data: {} },
    ]);
    expect(await audits(id)).toEqual([
      {
        actor: "user:alice@example.com",
        action: "dlq.group.triage",
        before: { owner: null, reason_code: null, status: "new" },
        after: { owner: "alice@example.com", reason_code: "dependency_outage", status: "investigating", note: "Stripe is down" },
      },
    ]);
    await triageGroup(db.appPrisma, { id, owner: "me", actor: "user:bob@example.com", callerUserId: BOB });
    await triageGroup(db.appPrisma, { id, owner: ALICE, actor: "cli:ops" });
    expect((await group(id)).owner_id).toBe(ALICE);
    // The same owner again is no change: no event, no audit row.
    await triageGroup(db.appPrisma, { id, owner: "alice@example.com", actor: "cli:ops" });
    expect((await thread(id)).map((e) => e.body)).toEqual([
      "assigned to alice@example.com",
      "reason dependency_outage",
      "new → investigating",
      "Stripe is down",
      "assigned to bob@example.com",
      "assigned to alice@example.com",
    ]);
    expect(await audits(id)).toHaveLength(3);
    await triageGroup(db.appPrisma, { id, owner: null, reason_code: null, actor: "cli:ops" });
    expect(await group(id)).toMatchObject({ owner_id: null, reason_code: null });
  });

  it("refuses unknown and disabled users, unknown and archived reason codes, past ignores, an unknown group — and changes nothing", async () => {
    const id = await fresh("refuse");
    await upsertReasonCode(db.appPrisma, { code: "retired", label: "Retired", description: "", archived: true, actor: "user:admin@example.com" });
    const before = await group(id);
    expect(await refused(triageGroup(db.appPrisma, { id, owner: "nobody@example.com", note: "x", actor: "cli:ops" }))).toMatch(/no console user/);
    expect(await refused(triageGroup(db.appPrisma, { id, owner: "carol@example.com", status: "fix_pending", actor: "cli:ops" }))).toMatch(/disabled/);
    expect(await refused(triageGroup(db.appPrisma, { id, owner: "me", actor: "cli:ops" }))).toMatch(/me/);
    expect(await refused(triageGroup(db.appPrisma, { id, status: "resolved", reason_code: "nope", actor: "cli:ops" }))).toMatch(/unknown reason code/);
    expect(await refused(triageGroup(db.appPrisma, { id, owner: ALICE, reason_code: "retired", actor: "cli:ops" }))).toMatch(/archived/);
    expect(
      await refused(triageGroup(db.appPrisma, { id, status: "ignored", ignore: { until: new Date(Date.now() - 60_000).toISOString() }, actor: "cli:ops" })),
    ).toMatch(/future/);
    expect(await refused(triageGroup(db.appPrisma, { id, status: "ignored", actor: "cli:ops" }))).toMatch(/ignore/);
    expect(await refused(triageGroup(db.appPrisma, { id, status: "resolved", ignore: { more: 3 }, actor: "cli:ops" }))).toMatch(/ignore/);
    await refused(triageGroup(db.appPrisma, { id: "999999", note: "x", actor: "cli:ops" }), "NOT_FOUND");
    await refused(triageGroup(db.appPrisma, { id: "abc", note: "x", actor: "cli:ops" }));
    expect(await group(id)).toEqual(before);
    expect(await thread(id)).toEqual([]);
    expect(await audits(id)).toEqual([]);
  });

  it("ignore until a future date or for N more deaths; resolving clears the regression flag", async () => {
    const id = await fresh("ignore");
    const until = new Date(Date.now() + 86400_000).toISOString();
    await triageGroup(db.appPrisma, { id, status: "ignored", ignore: { until }, actor: "cli:ops" });
    expect(await group(id)).toMatchObject({ status: "ignored", ignored_until: new Date(until), ignore_remaining: null });
    await triageGroup(db.appPrisma, { id, status: "ignored", ignore: { more: 5 }, actor: "cli:ops" });
    expect(await group(id)).toMatchObject({ status: "ignored", ignored_until: null, ignore_remaining: 5 });
    expect((await thread(id)).map((e) => e.body)).toEqual([`new → ignored until ${until}`, "ignored → ignored for 5 more"]);
    await db.pool.query(`UPDATE dlq_groups SET is_regression = true WHERE id = $1`, [id]);
    await triageGroup(db.appPrisma, { id, status: "resolved", actor: "cli:ops" });
    expect(await group(id)).toMatchObject({ status: "resolved", ignore_remaining: null, is_regression: false });
  });
});

describe("triage and deaths together", () => {
  it("resolved through triage, a new death reopens the group as a regression, after the status event on its thread", async () => {
    const id = await fresh("reopen");
    await triageGroup(db.appPrisma, { id, owner: ALICE, status: "resolved", reason_code: "bug", note: "fixed in 1.4.2", actor: "user:alice@example.com" });
    await killJobs(db.appPool, { poolId: "tp", jobType: "t.charge", message: () => "triage reopen 7", error: { code: "E_REOPEN" } });
    const detail = await getDlqGroup(db.appPool, id);
    expect(detail).toMatchObject({ status: "new", is_regression: true, owner: { id: ALICE }, reason_code: "bug", count: 2 });
    expect(detail!.events.map((e) => e.kind)).toEqual(["assigned", "reason", "status", "note", "reopened"]);
  });

  it("triage calls and deaths of the same group at once: no deadlock, exact counts, every change recorded", async () => {
    const id = await fresh("race");
    const sets = [];
    for (let k = 0; k < 4; k++)
      sets.push(
        await prepareDeaths(db.appPool, { poolId: "tp", jobType: "t.charge", n: 5, message: (i) => `triage race ${k}${i}`, error: { code: "E_RACE" } }),
      );
    await Promise.all([
      ...sets.map((set) => set.fail()),
      ...Array.from({ length: 6 }, (_, k) =>
        triageGroup(db.appPrisma, { id, note: `note ${k}`, ...(k % 2 ? { owner: ALICE } : { owner: BOB }), actor: "cli:ops" }),
      ),
    ]);
    expect(await group(id)).toMatchObject({ count: "21", dead_now: "21" });
    expect((await thread(id)).filter((e) => e.kind === "note")).toHaveLength(6);
  });
});

describe("triageJob and reason codes", () => {
  it("a dead job gets its own owner, status, reason and thread; a job that never died is a 404", async () => {
    const { jobIds } = await killJobs(db.appPool, { poolId: "tp", jobType: "t.charge", message: () => "job triage", error: { code: "E_JOBT" } });
    const view = await triageJob(db.appPrisma, {
      job_id: jobIds[0]!,
      owner: "bob@example.com",
      status: "investigating",
      reason_code: "bad_input",
      note: "payload has a bad SKU",
      actor: "user:alice@example.com",
    });
    expect(view).toMatchObject({
      job_id: jobIds[0],
      owner: { id: BOB, email: "bob@example.com", name: "Bob" },
      status: "investigating",
      reason_code: "bad_input",
    });
    expect(view.events.map((e) => e.kind)).toEqual(["assigned", "reason", "status", "note"]);
    expect((await audits(jobIds[0]!)).map((a) => a.action)).toEqual(["dlq.job.triage"]);
    await refused(triageJob(db.appPrisma, { job_id: "0190d7e4-0000-7000-8000-000000000001", note: "x", actor: "cli:ops" }), "NOT_FOUND");
    await refused(triageJob(db.appPrisma, { job_id: jobIds[0]!, owner: "ghost@example.com", actor: "cli:ops" }));
    expect((await db.pool.query(`SELECT owner_id FROM dlq_job_triage WHERE job_id = $1`, [jobIds[0]])).rows[0].owner_id).toBe(BOB);
  });

  it("reason codes: seeded list, admin create and update (audited), archived last", async () => {
    const seeded = (await listReasonCodes(db.appPrisma)).filter((c) => !c.archived).map((c) => c.code);
    expect(seeded).toEqual(expect.arrayContaining(["bad_input", "bug", "capacity", "config", "dependency_outage", "permission", "unknown"]));
    await upsertReasonCode(db.appPrisma, { code: "flaky_test", label: "Flaky", description: "a test env", archived: false, actor: "user:admin@example.com" });
    const updated = await upsertReasonCode(db.appPrisma, {
      code: "flaky_test",
      label: "Flaky env",
      description: "",
      archived: true,
      actor: "user:admin@example.com",
    });
    expect(updated).toEqual({ code: "flaky_test", label: "Flaky env", description: "", archived: true });
    expect((await listReasonCodes(db.appPrisma)).at(-1)?.archived).toBe(true);
    expect((await audits("flaky_test")).map((a) => a.action)).toEqual(["dlq.reason_code.create", "dlq.reason_code.update"]);
    await refused(upsertReasonCode(db.appPrisma, { code: "Bad Code", label: "x", description: "", archived: false, actor: "user:admin@example.com" }));
  });
});

describe("reads", () => {
  it("lists groups with filters, sort, offset pages, top 5 tenants, queues, a 24 h sparkline and the owner", async () => {
    const now = new Date();
    const tenants = ["tt1", "tt1", "tt1", "tt2", "tt2", "tt3", "tt4", "tt5", "tt6"];
    const big = (
      await killJobs(db.appPool, {
        poolId: "tp",
        jobType: "t.mail",
        n: tenants.length,
        tenant: (i) => tenants[i]!,
        message: (i) => `smtp 421 for user${i}@x.com`,
        error: { code: "SMTP_421" },
        now: new Date(now.getTime() - 3 * 3600_000),
      })
    ).groupIds[0]!;
    await killJobs(db.appPool, { poolId: "tp", jobType: "t.mail", n: 2, message: (i) => `smtp 421 for u${i}@y.com`, error: { code: "SMTP_421" }, now });
    const small = (await killJobs(db.appPool, { poolId: "tp", jobType: "t.mail", message: () => "mailbox full", error: { code: "SMTP_552" } })).groupIds[0]!;
    await triageGroup(db.appPrisma, { id: small, owner: ALICE, actor: "cli:ops" });

    const page = await listDlqGroups(db.appPool, { jobType: "t.mail", sort: "count", order: "desc" }, now);
    expect(page.total).toBe(2);
    expect(page.groups.map((g) => g.id)).toEqual([big, small]);
    const g = page.groups[0]!;
    expect(g).toMatchObject({ count: 11, dead_now: 11, error_code: "SMTP_421", owner: null, status: "new" });
    expect(g.tenants).toEqual([
      { tenant_id: "tt1", count: 3 },
      { tenant_id: "tenant_A", count: 2 },
      { tenant_id: "tt2", count: 2 },
      { tenant_id: "tt3", count: 1 },
      { tenant_id: "tt4", count: 1 },
    ]);
    expect(g.queues).toEqual([{ queue_id: "tq2", count: 11 }]);
    expect(g.sparkline).toHaveLength(24);
    expect(g.sparkline.at(-1)).toBe(2);
    expect(g.sparkline.at(-4)).toBe(9);
    expect(g.sparkline.reduce((a, b) => a + b, 0)).toBe(11);
    expect(page.groups[1]!.owner).toEqual({ id: ALICE, email: "alice@example.com", name: "Alice" });

    const p1 = await listDlqGroups(db.appPool, { jobType: "t.mail", sort: "count", order: "asc", limit: 1 });
    expect(p1).toMatchObject({ groups: [{ id: small }], next_cursor: "1", total: 2 });
    const p2 = await listDlqGroups(db.appPool, { jobType: "t.mail", sort: "count", order: "asc", limit: 1, offset: 1 });
    expect(p2).toMatchObject({ groups: [{ id: big }], next_cursor: null });
    expect((await listDlqGroups(db.appPool, { jobType: "t.mail", owner: "me", callerUserId: ALICE })).groups.map((x) => x.id)).toEqual([small]);
    expect((await listDlqGroups(db.appPool, { jobType: "t.mail", owner: "alice@example.com" })).groups.map((x) => x.id)).toEqual([small]);
    expect((await listDlqGroups(db.appPool, { jobType: "t.mail", owner: "none" })).groups.map((x) => x.id)).toEqual([big]);
    expect((await listDlqGroups(db.appPool, { tenantId: "tt6" })).groups.map((x) => x.id)).toEqual([big]);
    expect((await listDlqGroups(db.appPool, { queueId: "tq2", errorCode: "SMTP_552" })).groups.map((x) => x.id)).toEqual([small]);
    expect((await listDlqGroups(db.appPool, { queueId: "tq1", errorCode: "SMTP_552" })).groups).toEqual([]);
    expect((await listDlqGroups(db.appPool, { jobType: "t.mail", status: "new", sort: "last_seen" })).groups.map((x) => x.id)).toEqual([small, big]);
    await refused(listDlqGroups(db.appPool, { owner: "me" }));

    expect(await dlqErrorCodes(db.appPool)).toEqual(
      expect.arrayContaining([
        { code: "SMTP_421", count: 11 },
        { code: "SMTP_552", count: 1 },
      ]),
    );
  });

  it("detail: worker versions, oldest dead, thread; jobs dead now, or every death with where the job is now", async () => {
    const t = new Date(Date.now() - 7200_000);
    const { jobIds, groupIds } = await killJobs(db.appPool, {
      poolId: "tp",
      jobType: "t.charge",
      n: 3,
      message: (i) => `card ${i}0 declined`,
      error: { code: "E_CARD", worker_version: "v9" },
      now: t,
    });
    const id = groupIds[0]!;
    await triageGroup(db.appPrisma, { id, note: "looking", actor: "user:alice@example.com" });
    await redriveJobs(db.appPool, { jobIds: [jobIds[0]!], actor: "test:reads" });
    const detail = await getDlqGroup(db.appPool, id);
    expect(detail).toMatchObject({ id, count: 3, dead_now: 2, worker_versions: [{ version: "v9", count: 3 }], oldest_dead_at: t.toISOString() });
    expect(detail!.events.map((e) => [e.kind, e.body])).toEqual([["note", "looking"]]);
    expect(await getDlqGroup(db.appPool, "999999")).toBeNull();

    const dead = await listDlqGroupJobs(db.appPool, { id, limit: 1 });
    expect(dead.jobs).toHaveLength(1);
    expect(dead.next_cursor).toBe("1");
    const rest = await listDlqGroupJobs(db.appPool, { id, offset: 1 });
    expect([...dead.jobs, ...rest.jobs].map((j) => j.job_id).sort()).toEqual([jobIds[1], jobIds[2]].sort());
    expect(rest.jobs[0]).toMatchObject({
      state: "DEAD",
      queue_id: "tq1",
      error_message: expect.stringMatching(/^card \d0 declined$/),
      partial: false,
      redrive_count: 0,
    });
    const all = await listDlqGroupJobs(db.appPool, { id, isDeadOnly: false });
    const redriven = all.jobs.find((j) => j.job_id === jobIds[0]);
    expect(all.jobs).toHaveLength(3);
    expect(redriven).toMatchObject({ state: "READY", redrive_count: 1 });
    await refused(listDlqGroupJobs(db.appPool, { id: "999999" }), "NOT_FOUND");
  });

  it("a job's timeline shows the triage of the groups it died into and its own, interleaved by time", async () => {
    const { jobIds, groupIds } = await killJobs(db.appPool, { poolId: "tp", jobType: "t.charge", message: () => "timeline failure", error: { code: "E_TL" } });
    await triageGroup(db.appPrisma, { id: groupIds[0]!, owner: ALICE, note: "group note", actor: "user:alice@example.com" });
    await triageJob(db.appPrisma, { job_id: jobIds[0]!, note: "job note", actor: "user:bob@example.com" });
    const job = await getJob(db.appPool, jobIds[0]!);
    const kinds = job!.timeline.map((e) => e.kind);
    expect(kinds.slice(kinds.indexOf("dead"))).toEqual(["dead", "dlq.assigned", "dlq.note", "dlq.note"]);
    const triage = job!.timeline.filter((e) => e.kind.startsWith("dlq."));
    expect(triage.map((e) => [e.actor, e.data?.body])).toEqual([
      ["user:alice@example.com", "assigned to alice@example.com"],
      ["user:alice@example.com", "group note"],
      ["user:bob@example.com", "job note"],
    ]);
    expect(triage[0]!.data).toMatchObject({ group_id: groupIds[0] });
  });
});

describe("pruneDlq", () => {
  it("deletes hourly counts older than 8 days and deaths older than 14, in batches; keeps the rest and the groups", async () => {
    const now = new Date();
    const day = 86400_000;
    const old = await killJobs(db.appPool, {
      poolId: "tp",
      jobType: "t.charge",
      n: 5,
      message: () => "old failure",
      error: { code: "E_OLD" },
      now: new Date(now.getTime() - 15 * day),
    });
    await killJobs(db.appPool, {
      poolId: "tp",
      jobType: "t.charge",
      n: 2,
      message: () => "old failure",
      error: { code: "E_OLD" },
      now: new Date(now.getTime() - 9 * day),
    });
    await killJobs(db.appPool, { poolId: "tp", jobType: "t.charge", n: 1, message: () => "old failure", error: { code: "E_OLD" }, now });
    const id = old.groupIds[0]!;
    const hours = () => db.pool.query(`SELECT deaths FROM dlq_group_hours WHERE group_id = $1 ORDER BY hour`, [id]).then((r) => r.rows.map((x) => x.deaths));
    const deaths = () => db.pool.query(`SELECT count(*)::int AS n FROM dlq_deaths WHERE group_id = $1`, [id]).then((r) => r.rows[0].n);
    expect(await hours()).toEqual([5, 2, 1]);
    const out = await pruneDlq(db.appPool, { now, batch: 2, maxBatches: 100 });
    expect(out.hours).toBeGreaterThanOrEqual(2);
    expect(out.deaths).toBeGreaterThanOrEqual(5);
    expect(await hours()).toEqual([1]);
    expect(await deaths()).toBe(3);
    expect(await group(id)).toMatchObject({ count: "8", dead_now: "8" });
    // Bounded per call: one batch of one row at a time leaves the rest for the next pass.
    await killJobs(db.appPool, {
      poolId: "tp",
      jobType: "t.charge",
      n: 3,
      message: () => "old failure",
      error: { code: "E_OLD" },
      now: new Date(now.getTime() - 20 * day),
    });
    expect((await pruneDlq(db.appPool, { now, batch: 1, maxBatches: 2 })).deaths).toBe(2);
    expect(await deaths()).toBe(4);
  });
});
