import { randomUUID } from "node:crypto";
import { controlPlane } from "@porter/core/testing/control-plane-factory";
import { killJobs } from "@porter/core/testing/dlq-fixtures";
import { useTestDatabase } from "@porter/db/testing/test-database";
import { TRPCError } from "@trpc/server";
import { beforeAll, describe, expect, it } from "vitest";
import { consoleCaller, sessionOf } from "./testing/console";

// The dlq.* procedures of failure groups, triage and reason codes, and the jobs browser's error
// codes, as the console calls them: viewers read, operators triage, admins edit reason codes; a
// refused or bad call changes nothing.
const db = useTestDatabase();
const OPERATOR = { userId: "u_op", email: "op@example.com", role: "operator" as const };
const viewer = () => consoleCaller(db.appPool, sessionOf("viewer"));
const operator = () => consoleCaller(db.appPool, OPERATOR);
const admin = () => consoleCaller(db.appPool, sessionOf("admin"));
let groupId: string;
let jobIds: string[];

beforeAll(async () => {
  await controlPlane(db.pool, { pool: "dg-pool", queues: [{ id: "dg-q" }], tenants: ["dg_t1", "dg_t2"] });
  await db.pool.query(`INSERT INTO users (id, email, name, password_hash, role) VALUES ('u_op', 'op@example.com', 'Op', 'x', 'operator')`);
  const killed = await killJobs(db.appPool, {
    poolId: "dg-pool",
    jobType: "dg-q.job",
    n: 4,
    tenant: (i) => (i % 2 ? "dg_t1" : "dg_t2"),
    message: (i) => `GET https://api.example.com/items/${i} returned 503`,
    error: { code: "HTTP_503" },
  });
  groupId = killed.groupIds[0]!;
  jobIds = killed.jobIds;
  await killJobs(db.appPool, { poolId: "dg-pool", jobType: "dg-q.job", tenant: () => "dg_t1", message: () => "quota exceeded", error: { code: "QUOTA" } });
});

const codeOf = async (p: Promise<unknown>) => {
  const error = await p.catch((e: unknown) => e);
  expect(error).toBeInstanceOf(TRPCError);
  return (error as TRPCError).code;
};
const eventCount = async () => (await db.pool.query(`SELECT count(*)::int AS n FROM dlq_events`)).rows[0].n as number;

describe("dlq.groups", () => {
  it("a viewer lists groups (filters, top tenants, sparkline), opens one and its jobs", async () => {
    const list = await viewer().dlq.groups.list({ error_code: "HTTP_503" });
    expect(list.total).toBe(1);
    expect(list.groups[0]).toMatchObject({ id: groupId, count: 4, dead_now: 4, status: "new", owner: null, queues: [{ queue_id: "dg-q", count: 4 }] });
    expect(list.groups[0]!.tenants).toEqual([
      { tenant_id: "dg_t1", count: 2 },
      { tenant_id: "dg_t2", count: 2 },
    ]);
    expect(list.groups[0]!.sparkline.at(-1)).toBe(4);
    expect((await viewer().dlq.groups.list({ sort: "count", order: "asc", limit: 1 })).next_cursor).toBe("1");
    const detail = await viewer().dlq.groups.get({ id: groupId });
    expect(detail).toMatchObject({ normalized_message: "GET <url> returned <n>", worker_versions: [{ version: "fixture-1", count: 4 }], events: [] });
    const jobs = await viewer().dlq.groups.jobs({ id: groupId, limit: 3 });
    expect(jobs.jobs).toHaveLength(3);
    expect(jobs.next_cursor).toBe("3");
    expect(await codeOf(viewer().dlq.groups.get({ id: "424242" }))).toBe("NOT_FOUND");
  });

  it("an operator triages (owner me, status, reason, note) and gets the detail back; a viewer is refused with 403", async () => {
    expect(await codeOf(viewer().dlq.groups.triage({ id: groupId, note: "nope" }))).toBe("FORBIDDEN");
    expect(await codeOf(viewer().dlq.jobs.triage({ job_id: jobIds[0]!, note: "nope" }))).toBe("FORBIDDEN");
    expect(await eventCount()).toBe(0);
    const detail = await operator().dlq.groups.triage({
      id: groupId,
      owner: "me",
      status: "investigating",
      reason_code: "dependency_outage",
      note: "provider incident",
    });
    expect(detail).toMatchObject({ owner: { id: "u_op", email: "op@example.com", name: "Op" }, status: "investigating", reason_code: "dependency_outage" });
    expect(detail.events.map((e) => [e.kind, e.actor])).toEqual([
      ["assigned", "user:op@example.com"],
      ["reason", "user:op@example.com"],
      ["status", "user:op@example.com"],
      ["note", "user:op@example.com"],
    ]);
    const mine = await operator().dlq.groups.list({ owner: "me" });
    expect(mine.groups.map((g) => g.id)).toEqual([groupId]);
    const job = await operator().dlq.jobs.triage({ job_id: jobIds[1]!, status: "fix_pending", note: "this one is special" });
    expect(job).toMatchObject({ job_id: jobIds[1], group_id: groupId, status: "fix_pending", owner: null });
    // A viewer reads the job's own triage and thread (dlq.jobs.get); a job that never died is a 404.
    const read = await viewer().dlq.jobs.get({ job_id: jobIds[1]! });
    expect(read).toMatchObject({ job_id: jobIds[1], group_id: groupId, status: "fix_pending", owner: null, reason_code: null });
    expect(read.events.map((e) => [e.kind, e.body])).toEqual([
      ["status", "new → fix_pending"],
      ["note", "this one is special"],
    ]);
    expect(await codeOf(viewer().dlq.jobs.get({ job_id: randomUUID() }))).toBe("NOT_FOUND");
    // The job's timeline shows both threads.
    const timeline = (await viewer().jobs.get({ job_id: jobIds[1]! })).timeline.map((e) => e.kind);
    expect(timeline).toEqual(expect.arrayContaining(["dlq.assigned", "dlq.note", "dlq.status"]));
  });

  it("bad triage input is a 400 and changes nothing", async () => {
    const before = await viewer().dlq.groups.get({ id: groupId });
    const events = await eventCount();
    for (const input of [
      { id: groupId, owner: "ghost@example.com" },
      { id: groupId, reason_code: "not_a_code" },
      { id: groupId, status: "ignored" as const },
      { id: groupId, status: "ignored" as const, ignore: { until: "2001-01-01T00:00:00Z" } },
      { id: groupId, status: "resolved" as const, ignore: { more: 2 } },
      { id: groupId },
      { id: "0", note: "x" },
      { id: groupId, note: "" },
    ]) {
      expect(await codeOf(operator().dlq.groups.triage(input as never)), JSON.stringify(input)).toBe("BAD_REQUEST");
    }
    expect(await codeOf(operator().dlq.jobs.triage({ job_id: "not-a-uuid", note: "x" }))).toBe("BAD_REQUEST");
    expect(await viewer().dlq.groups.get({ id: groupId })).toEqual(before);
    expect(await eventCount()).toBe(events);
  });
});

describe("triage and its audit commit together", () => {
  it("when the audit row is refused, the triage (group, thread) and a reason-code edit are rolled back", async () => {
    await db.pool.query(`
      CREATE FUNCTION refuse_saboteur_audit() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.actor = 'user:saboteur@example.com' THEN RAISE EXCEPTION 'audit insert refused (test)'; END IF;
        RETURN NEW;
      END $$;
      CREATE TRIGGER refuse_saboteur_audit BEFORE INSERT ON audit_log FOR EACH ROW EXECUTE FUNCTION refuse_saboteur_audit();
    `);
    const saboteur = () => consoleCaller(db.appPool, sessionOf("admin", "saboteur@example.com"));
    const before = await viewer().dlq.groups.get({ id: groupId });
    const events = await eventCount();
    await expect(saboteur().dlq.groups.triage({ id: groupId, status: "fix_pending", note: "sabotage" })).rejects.toThrow();
    await expect(saboteur().dlq.jobs.triage({ job_id: jobIds[2]!, status: "resolved" })).rejects.toThrow();
    await expect(saboteur().dlq.reasonCodes.upsert({ code: "sabotage", label: "Sabotage" })).rejects.toThrow();
    expect(await viewer().dlq.groups.get({ id: groupId })).toEqual(before);
    expect(await eventCount()).toBe(events);
    expect((await db.pool.query(`SELECT count(*)::int AS n FROM dlq_job_triage WHERE job_id = $1`, [jobIds[2]])).rows[0].n).toBe(0);
    expect((await viewer().dlq.reasonCodes.list({})).codes.map((c) => c.code)).not.toContain("sabotage");
  });
});

describe("dlq.reasonCodes", () => {
  it("everyone reads the list; only an admin edits it", async () => {
    const { codes } = await viewer().dlq.reasonCodes.list({});
    expect(codes.map((c) => c.code)).toEqual(expect.arrayContaining(["bug", "bad_input", "dependency_outage", "config", "capacity", "permission", "unknown"]));
    expect(await codeOf(operator().dlq.reasonCodes.upsert({ code: "vendor", label: "Vendor" }))).toBe("FORBIDDEN");
    expect(await admin().dlq.reasonCodes.upsert({ code: "vendor", label: "Vendor", description: "a third party" })).toEqual({
      code: "vendor",
      label: "Vendor",
      description: "a third party",
      archived: false,
    });
    expect(await codeOf(admin().dlq.reasonCodes.upsert({ code: "Vendor X", label: "x" }))).toBe("BAD_REQUEST");
    await admin().dlq.reasonCodes.upsert({ code: "vendor", label: "Vendor", archived: true });
    expect(await codeOf(operator().dlq.groups.triage({ id: groupId, reason_code: "vendor" }))).toBe("BAD_REQUEST");
  });
});

describe("jobs.errorCodes and the error_code filter", () => {
  it("offers the codes DEAD jobs carry now, with counts, and the jobs list filters by one", async () => {
    expect((await viewer().jobs.errorCodes({})).codes).toEqual([
      { code: "HTTP_503", count: 4 },
      { code: "QUOTA", count: 1 },
    ]);
    const page = await viewer().jobs.list({ filter: { error_code: "HTTP_503" }, limit: 50 });
    expect(page.jobs.map((j) => j.job_id).sort()).toEqual([...jobIds].sort());
    expect(page.jobs.every((j) => j.error_code === "HTTP_503")).toBe(true);
    expect((await viewer().jobs.counts({ filter: { error_code: "QUOTA" } })).DEAD).toBe(1);
  });
});
