import { AppError } from "@porter/contracts";
import { useTestDatabase } from "@porter/db/testing/test-database";
import { beforeAll, describe, expect, it } from "vitest";
import { tenantCountsByState } from "../reads/job-counts";
import { enqueueJobs } from "../sql/enqueue-jobs";
import { controlPlane } from "../testing/control-plane-factory";
import { createStatusLink, listStatusLinks, parseLinkDuration, resolveStatusLink, revokeStatusLink, statusLinkById } from "./status-links";

// Tenant status links (issue 13, deliverable 2) on Prisma as the runtime role: the token is
// returned once and only its SHA-256 is stored; expired and revoked links resolve to null; every
// change is audited; bad input is a 4xx that stores nothing.
const db = useTestDatabase();

beforeAll(async () => {
  await controlPlane(db.pool, {
    queues: [{ id: "sl-q" }],
    jobTypes: [
      { id: "sl.a", queue: "sl-q" },
      { id: "sl.b", queue: "sl-q" },
    ],
    tenants: ["sl_t1", "sl_t2"],
  });
});

const linkRows = async () => (await db.pool.query(`SELECT * FROM tenant_status_links ORDER BY created_at, id`)).rows;
const rejects = async (fn: () => Promise<unknown>, code: string) => {
  const error = await fn().then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(AppError);
  expect((error as AppError).code).toBe(code);
};

describe("status links", () => {
  it("creates a link whose token is stored only as its SHA-256, resolves it, lists it, and audits it", async () => {
    const link = await createStatusLink(db.appPrisma, { tenantId: "sl_t1", jobTypes: ["sl.a"], expiresInSeconds: 3600, actor: "user:ops" });
    expect(link.id).toMatch(/^sl_[0-9a-f]{18}$/);
    expect(link.token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const row = (await db.pool.query(`SELECT * FROM tenant_status_links WHERE id = $1`, [link.id])).rows[0];
    const { createHash } = await import("node:crypto");
    expect(row.token_hash).toBe(createHash("sha256").update(link.token).digest("hex"));
    // The token appears nowhere in the database: not in the link row, not in the audit log.
    const dump = JSON.stringify((await db.pool.query(`SELECT to_jsonb(t) AS r FROM tenant_status_links t`)).rows);
    const audit = (await db.pool.query(`SELECT action, object_id, after FROM audit_log WHERE object_id = $1 ORDER BY id`, [link.id])).rows;
    expect(dump).not.toContain(link.token);
    expect(JSON.stringify(audit)).not.toContain(link.token);
    expect(audit).toEqual([
      { action: "status_link.create", object_id: link.id, after: { tenant_id: "sl_t1", job_types: ["sl.a"], expires_at: link.expires_at } },
    ]);
    expect(new Date(link.expires_at).getTime() - new Date(row.created_at).getTime()).toBe(3600_000);

    expect(row.last_used_at).toBeNull();
    const scope = await resolveStatusLink(db.appPrisma, link.token);
    expect(scope).toEqual({ id: link.id, tenantId: "sl_t1", jobTypes: ["sl.a"], expiresAt: new Date(link.expires_at) });
    expect((await db.pool.query(`SELECT last_used_at FROM tenant_status_links WHERE id = $1`, [link.id])).rows[0].last_used_at).not.toBeNull();
    expect(await statusLinkById(db.appPrisma, link.id)).toEqual(scope);

    const listed = await listStatusLinks(db.appPrisma, "sl_t1");
    expect(listed.find((l) => l.id === link.id)).toMatchObject({
      id: link.id,
      tenant_id: "sl_t1",
      job_types: ["sl.a"],
      state: "active",
      revoked_at: null,
      created_by: "user:ops",
    });
    expect(JSON.stringify(listed)).not.toContain(link.token);
    expect(await listStatusLinks(db.appPrisma, "sl_t2")).toEqual([]);
  });

  it("refuses unknown, malformed and wrong tokens", async () => {
    const link = await createStatusLink(db.appPrisma, { tenantId: "sl_t1", actor: "user:ops" });
    expect(await resolveStatusLink(db.appPrisma, `${link.token.slice(0, -1)}${link.token.endsWith("A") ? "B" : "A"}`)).toBeNull();
    expect(await resolveStatusLink(db.appPrisma, "")).toBeNull();
    expect(await resolveStatusLink(db.appPrisma, "x' OR 1=1 --")).toBeNull();
    expect(await statusLinkById(db.appPrisma, "sl_000000000000000000")).toBeNull();
    expect(await resolveStatusLink(db.appPrisma, link.token)).toMatchObject({ tenantId: "sl_t1", jobTypes: [] });
  });

  it("an expired link resolves to null and is listed as expired", async () => {
    const link = await createStatusLink(db.appPrisma, { tenantId: "sl_t2", expiresInSeconds: 60, actor: "user:ops" });
    expect(await resolveStatusLink(db.appPrisma, link.token)).not.toBeNull();
    // Move the link's times into the past, as if it had been issued 2 minutes ago.
    await db.pool.query(`UPDATE tenant_status_links SET created_at = now() - interval '2 minutes', expires_at = now() - interval '1 minute' WHERE id = $1`, [
      link.id,
    ]);
    expect(await resolveStatusLink(db.appPrisma, link.token)).toBeNull();
    expect(await statusLinkById(db.appPrisma, link.id)).toBeNull();
    expect((await listStatusLinks(db.appPrisma, "sl_t2")).find((l) => l.id === link.id)?.state).toBe("expired");
  });

  it("a revoked link resolves to null at once; revoking twice or an unknown id is 404; revocation is audited", async () => {
    const link = await createStatusLink(db.appPrisma, { tenantId: "sl_t1", actor: "user:ops" });
    expect(await resolveStatusLink(db.appPrisma, link.token)).not.toBeNull();
    await revokeStatusLink(db.appPrisma, { id: link.id, actor: "user:revoker", reason: "leaked" });
    expect(await resolveStatusLink(db.appPrisma, link.token)).toBeNull();
    expect(await statusLinkById(db.appPrisma, link.id)).toBeNull();
    expect((await listStatusLinks(db.appPrisma, "sl_t1")).find((l) => l.id === link.id)?.state).toBe("revoked");
    await rejects(() => revokeStatusLink(db.appPrisma, { id: link.id, actor: "user:revoker" }), "NOT_FOUND");
    await rejects(() => revokeStatusLink(db.appPrisma, { id: "sl_nope", actor: "user:revoker" }), "NOT_FOUND");
    const audit = (await db.pool.query(`SELECT actor, action, reason FROM audit_log WHERE object_id = $1 AND action = 'status_link.revoke'`, [link.id])).rows;
    expect(audit).toEqual([{ actor: "user:revoker", action: "status_link.revoke", reason: "leaked" }]);
  });

  it("bad input is a 4xx and stores nothing", async () => {
    const before = await linkRows();
    await rejects(() => createStatusLink(db.appPrisma, { tenantId: "nobody", actor: "user:ops" }), "BAD_REQUEST");
    await rejects(() => createStatusLink(db.appPrisma, { tenantId: "sl_t1", jobTypes: ["nope"], actor: "user:ops" }), "BAD_REQUEST");
    await rejects(() => createStatusLink(db.appPrisma, { tenantId: "sl_t1", jobTypes: ["*"], actor: "user:ops" }), "BAD_REQUEST");
    await rejects(() => createStatusLink(db.appPrisma, { tenantId: "sl_t1", expiresInSeconds: 10, actor: "user:ops" }), "BAD_REQUEST");
    await rejects(() => createStatusLink(db.appPrisma, { tenantId: "sl_t1", expiresInSeconds: 91 * 86400, actor: "user:ops" }), "BAD_REQUEST");
    await rejects(() => listStatusLinks(db.appPrisma, "nobody"), "NOT_FOUND");
    expect(await linkRows()).toEqual(before);
  });

  it("parses durations", () => {
    expect(parseLinkDuration("7d")).toBe(7 * 86400);
    expect(parseLinkDuration("12h")).toBe(43200);
    expect(parseLinkDuration("90")).toBe(90);
    expect(parseLinkDuration("3w")).toBeNull();
    expect(parseLinkDuration("-1d")).toBeNull();
  });

  it("tenantCountsByState counts one tenant's jobs, limited to job types", async () => {
    await enqueueJobs(db.pool, [
      { job_type: "sl.a", tenant_id: "sl_t1", payload: {}, idempotency_key: "c1" },
      { job_type: "sl.a", tenant_id: "sl_t1", payload: {}, idempotency_key: "c2" },
      { job_type: "sl.b", tenant_id: "sl_t1", payload: {}, idempotency_key: "c3" },
      { job_type: "sl.a", tenant_id: "sl_t2", payload: {}, idempotency_key: "c4" },
    ]);
    expect(await tenantCountsByState(db.pool, "sl_t1", [])).toEqual({ READY: 3 });
    expect(await tenantCountsByState(db.pool, "sl_t1", ["sl.a"])).toEqual({ READY: 2 });
    expect(await tenantCountsByState(db.pool, "sl_t2", ["sl.b"])).toEqual({});
  });
});
