import { createStatusLink, revokeStatusLink } from "@porter/core";
import { controlPlane } from "@porter/core/testing/control-plane-factory";
import { useTestDatabase as testDatabase } from "@porter/db/testing/test-database";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

// Following a tenant status link at the route level (issue 13, deliverable 2): the console's
// GET /status/link/<token> handler on a real database (the runtime role), and the status page's
// authorisation (statusPageAccess) with the cookie the handler set. A good token → 303 to
// /status/<tenant> with a signed, HttpOnly, SameSite=Lax cookie scoped to that path and no token
// in the Location; a bad, expired or revoked token → 404 and no cookie; the cookie opens only its
// own tenant's page, and stops working once the link is revoked.
// (Aliased: the console's lint reads a `use…` call at module level as a React hook.)
const db = testDatabase();
const SECRET = "status-links-test-secret-0123456789";
type RouteModule = typeof import("./link/[token]/route");
type AccessModule = typeof import("../../server/status-access");
let route: RouteModule;
let access: AccessModule;

beforeAll(async () => {
  process.env.PORTER_APP_DATABASE_URL = db.appConnectionString;
  process.env.AUTH_SECRET = SECRET;
  delete process.env.NEXTAUTH_URL;
  await controlPlane(db.pool, { queues: [{ id: "rt-q" }], jobTypes: [{ id: "rt.a", queue: "rt-q" }], tenants: ["rt_a", "rt_b"] });
  route = await import("./link/[token]/route");
  access = await import("../../server/status-access");
});
afterAll(async () => {
  await (globalThis as { porterConsolePool?: { end: () => Promise<void> } }).porterConsolePool?.end();
});

const follow = (token: string, base = "http://127.0.0.1:3000") =>
  route.GET(new Request(`${base}/status/link/${token}`), { params: Promise.resolve({ token }) });
const cookieValue = (setCookie: string) => /^porter_status=([^;]+)/.exec(setCookie)?.[1];
const pageAccess = (tenantId: string, cookie: string | undefined, sessionRole: string | null = null) =>
  access.statusPageAccess(db.appPrisma, { tenantId, cookie, secret: SECRET, sessionRole });

describe("GET /status/link/<token>", () => {
  it("sets a scoped, signed cookie and redirects to the tenant's page without the token; the cookie opens only that tenant's page", async () => {
    const link = await createStatusLink(db.appPrisma, { tenantId: "rt_a", jobTypes: ["rt.a"], actor: "user:ops" });
    const res = await follow(link.token);
    expect(res.status).toBe(303);
    expect(res.headers.get("location")).toBe("/status/rt_a");
    expect(res.headers.get("cache-control")).toBe("private, no-store");
    const setCookie = res.headers.get("set-cookie")!;
    expect(setCookie).toContain("Path=/status/rt_a");
    expect(setCookie).toContain("HttpOnly");
    expect(setCookie).toContain("SameSite=Lax");
    expect(setCookie).not.toContain("Secure");
    expect(setCookie).not.toContain(link.token);
    const value = cookieValue(setCookie)!;
    expect(value.startsWith(`${link.id}.`)).toBe(true);

    expect(await pageAccess("rt_a", value)).toMatchObject({ kind: "link", jobTypes: ["rt.a"] });
    // Another tenant's page with this cookie, a forged signature, another link's id: refused.
    expect(await pageAccess("rt_b", value)).toBeNull();
    expect(await pageAccess("rt_a", `${link.id}.AAAA`)).toBeNull();
    expect(await pageAccess("rt_a", undefined)).toBeNull();
    expect(await pageAccess("rt_a", undefined, "viewer")).toBeNull();
    expect(await pageAccess("rt_b", undefined, "operator")).toEqual({ kind: "operator", jobTypes: [] });

    // Revoked: the cookie stops working at once, and the link itself is refused.
    await revokeStatusLink(db.appPrisma, { id: link.id, actor: "user:ops" });
    expect(await pageAccess("rt_a", value)).toBeNull();
    const again = await follow(link.token);
    expect(again.status).toBe(404);
    expect(again.headers.get("set-cookie")).toBeNull();
  });

  it("over https the cookie is Secure", async () => {
    const link = await createStatusLink(db.appPrisma, { tenantId: "rt_b", actor: "user:ops" });
    const res = await follow(link.token, "https://status.example.com");
    expect(res.status).toBe(303);
    expect(res.headers.get("set-cookie")).toContain("Secure");
  });

  it("an unknown, malformed or expired token is a 404 and sets nothing", async () => {
    const link = await createStatusLink(db.appPrisma, { tenantId: "rt_a", actor: "user:ops" });
    const value = cookieValue((await follow(link.token)).headers.get("set-cookie")!)!;
    await db.pool.query(`UPDATE tenant_status_links SET created_at = now() - interval '2 days', expires_at = now() - interval '1 second' WHERE id = $1`, [
      link.id,
    ]);
    for (const token of [link.token, "A".repeat(43), "not-a-token", ""]) {
      const res = await follow(token);
      expect(res.status, token).toBe(404);
      expect(res.headers.get("set-cookie"), token).toBeNull();
    }
    expect(await pageAccess("rt_a", value)).toBeNull();
  });
});
