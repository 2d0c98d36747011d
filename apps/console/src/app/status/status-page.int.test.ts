import { createStatusLink, enqueueJobs, revokeStatusLink } from "@porter/core";
import { controlPlane } from "@porter/core/testing/control-plane-factory";
import { useTestDatabase as testDatabase } from "@porter/db/testing/test-database";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

// The tenant status pages' access and reads (issue 13, deliverable 3) on a real database through
// the runtime role: what /status/<tenant_id> and /status/<tenant_id>/jobs/<job_id> load
// (server/status-page.ts) with the cookie a followed link sets. A refused request, another
// tenant's job and a job type outside the link are all null (the page's one 404).
// (Aliased: the console's lint reads a `use…` call at module level as a React hook.)
const db = testDatabase();
const SECRET = "status-page-test-secret-0123456789";
type RouteModule = typeof import("./link/[token]/route");
type PageModule = typeof import("../../server/status-page");
type OriginsModule = typeof import("../../server/status-origins");
let route: RouteModule;
let page: PageModule;
let origins: OriginsModule;
const jobs: Record<string, string> = {};

beforeAll(async () => {
  process.env.PORTER_APP_DATABASE_URL = db.appConnectionString;
  process.env.AUTH_SECRET = SECRET;
  delete process.env.NEXTAUTH_URL;
  await controlPlane(db.pool, {
    queues: [{ id: "sp-q" }],
    jobTypes: [
      { id: "sp.a", queue: "sp-q" },
      { id: "sp.b", queue: "sp-q" },
    ],
    tenants: [{ id: "sp_a", name: "Acme Ltd" }, "sp_b"],
  });
  await db.pool.query(`UPDATE tenants SET status_accent = '#ff6600', status_origins = '{https://app.acme.example}' WHERE id = 'sp_a'`);
  let n = 0;
  for (const [key, type, tenant] of [
    ["a1", "sp.a", "sp_a"],
    ["b1", "sp.b", "sp_a"],
    ["other", "sp.a", "sp_b"],
  ] as const) {
    const [r] = await enqueueJobs(db.pool, [{ job_type: type, tenant_id: tenant, payload: {}, idempotency_key: `sp-${++n}` }], { notify: false });
    jobs[key] = r!.job_id;
  }
  route = await import("./link/[token]/route");
  page = await import("../../server/status-page");
  origins = await import("../../server/status-origins");
});
afterAll(async () => {
  await (globalThis as { porterConsolePool?: { end: () => Promise<void> } }).porterConsolePool?.end();
});

const follow = async (token: string, base = "http://127.0.0.1:3000") => {
  const res = await route.GET(new Request(`${base}/status/link/${token}`), { params: Promise.resolve({ token }) });
  return { res, cookie: /^porter_status=([^;]+)/.exec(res.headers.get("set-cookie") ?? "")?.[1] };
};
const req = (tenantId: string, cookie: string | undefined, sessionRole: string | null = null) => ({ tenantId, cookie, secret: SECRET, sessionRole });
const noQuery: import("../../server/status-page").StatusQuery = { state: null, type: null, cursor: null };
const list = (tenantId: string, cookie: string | undefined, sessionRole: string | null = null, query = noQuery) =>
  page.loadStatusPage(db.appPrisma, db.appPool, { ...req(tenantId, cookie, sessionRole), query });
const job = (tenantId: string, cookie: string | undefined, jobId: string, sessionRole: string | null = null) =>
  page.loadStatusJob(db.appPrisma, db.appPool, { ...req(tenantId, cookie, sessionRole), jobId });

describe("the status pages", () => {
  it("a link limited to sp.a: its tenant's name and accent, its type's jobs; the job page of another tenant or type is a 404", async () => {
    const link = await createStatusLink(db.appPrisma, { tenantId: "sp_a", jobTypes: ["sp.a"], actor: "user:ops" });
    const { cookie } = await follow(link.token);
    const data = await list("sp_a", cookie);
    expect(data?.tenant).toEqual({ id: "sp_a", name: "Acme Ltd", accent: "#ff6600" });
    expect(data?.page.jobs.map((j) => j.job_id)).toEqual([jobs.a1]);
    expect(data?.counts).toEqual({ READY: 1 });
    // A filter on a type outside the link: nothing.
    expect((await list("sp_a", cookie, null, { ...noQuery, type: "sp.b" }))?.page.jobs).toEqual([]);

    expect((await job("sp_a", cookie, jobs.a1!))?.job.job_id).toBe(jobs.a1);
    expect(await job("sp_a", cookie, jobs.b1!)).toBeNull(); // out of the link's types
    expect(await job("sp_a", cookie, jobs.other!)).toBeNull(); // another tenant's job, under this tenant's path
    expect(await job("sp_b", cookie, jobs.other!)).toBeNull(); // the other tenant's path: not this cookie's
    expect(await job("sp_a", cookie, "not-a-uuid")).toBeNull();
  });

  it("an expired or revoked link is refused on both pages; no cookie, a viewer: refused; an operator sees every type", async () => {
    const link = await createStatusLink(db.appPrisma, { tenantId: "sp_a", actor: "user:ops" });
    const { cookie } = await follow(link.token);
    expect((await list("sp_a", cookie))?.page.jobs).toHaveLength(2);
    await revokeStatusLink(db.appPrisma, { id: link.id, actor: "user:ops" });
    expect(await list("sp_a", cookie)).toBeNull();
    expect(await job("sp_a", cookie, jobs.a1!)).toBeNull();

    const expiring = await createStatusLink(db.appPrisma, { tenantId: "sp_a", actor: "user:ops" });
    const second = await follow(expiring.token);
    await db.pool.query(`UPDATE tenant_status_links SET created_at = now() - interval '2 days', expires_at = now() - interval '1 second' WHERE id = $1`, [
      expiring.id,
    ]);
    expect(await list("sp_a", second.cookie)).toBeNull();
    expect(await job("sp_a", second.cookie, jobs.a1!)).toBeNull();

    expect(await list("sp_a", undefined)).toBeNull();
    expect(await list("sp_a", undefined, "viewer")).toBeNull();
    expect((await list("sp_a", undefined, "operator"))?.page.jobs).toHaveLength(2);
    expect((await job("sp_b", undefined, jobs.other!, "admin"))?.job.job_id).toBe(jobs.other);
    expect(await list("no_such_tenant", undefined, "operator")).toBeNull();
  });

  it("parses the URL query leniently: unknown states, long types and bad cursors are dropped", () => {
    expect(page.parseStatusQuery({ state: "running", type: " sp.a ", cursor: "x" })).toEqual({ state: "RUNNING", type: "sp.a", cursor: null });
    expect(page.parseStatusQuery({ state: ["NOPE"], type: "t".repeat(201) })).toEqual(noQuery);
  });
});

describe("embedding", () => {
  it("the tenant's status_origins feed frame-ancestors (cached a few seconds); none for an unknown tenant or the link route", async () => {
    expect(origins.statusTenantOfPath("/status/sp_a")).toBe("sp_a");
    expect(origins.statusTenantOfPath("/status/sp_a/jobs/x")).toBe("sp_a");
    expect(origins.statusTenantOfPath("/status/sp%20a/events")).toBe("sp a");
    expect(origins.statusTenantOfPath("/status/link/abc")).toBeNull();
    expect(origins.statusTenantOfPath("/tenants/sp_a")).toBeNull();
    const t0 = Date.now();
    expect(await origins.statusOrigins(db.appPrisma, "sp_a", t0)).toEqual(["https://app.acme.example"]);
    expect(await origins.statusOrigins(db.appPrisma, "nobody", t0)).toEqual([]);
    await db.pool.query(`UPDATE tenants SET status_origins = '{}' WHERE id = 'sp_a'`);
    expect(await origins.statusOrigins(db.appPrisma, "sp_a", t0 + 1000)).toEqual(["https://app.acme.example"]);
    expect(await origins.statusOrigins(db.appPrisma, "sp_a", t0 + origins.STATUS_ORIGINS_TTL_MS + 1)).toEqual([]);
    await db.pool.query(`UPDATE tenants SET status_origins = '{https://app.acme.example}' WHERE id = 'sp_a'`);
    // (Past the cached [] again, so the next test reads the restored origins.)
    expect(await origins.statusOrigins(db.appPrisma, "sp_a", Date.now() + 2 * origins.STATUS_ORIGINS_TTL_MS)).toEqual(["https://app.acme.example"]);
  });

  it("a tenant that embeds its page gets a SameSite=None; Secure; Partitioned cookie over https, Lax otherwise", async () => {
    const a = await createStatusLink(db.appPrisma, { tenantId: "sp_a", actor: "user:ops" });
    const overHttps = (await follow(a.token, "https://status.example.com")).res.headers.get("set-cookie")!;
    expect(overHttps).toContain("SameSite=None; Secure; Partitioned");
    const b = await createStatusLink(db.appPrisma, { tenantId: "sp_b", actor: "user:ops" });
    const lax = (await follow(b.token, "https://status.example.com")).res.headers.get("set-cookie")!;
    expect(lax).toContain("SameSite=Lax; Secure");
    expect(lax).not.toContain("SameSite=None");
    const c = await createStatusLink(db.appPrisma, { tenantId: "sp_a", actor: "user:ops" });
    expect((await follow(c.token)).res.headers.get("set-cookie")).toContain("SameSite=Lax");
  });
});
