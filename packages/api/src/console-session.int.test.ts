import { createApiKey, createUser, endUserSessions, getActiveUser, PolicyCache, updateUser } from "@porter/core";
import { controlPlane } from "@porter/core/testing/control-plane-factory";
import { useTestDatabase } from "@porter/db/testing/test-database";
import { encode } from "next-auth/jwt";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSessionReader, createSessionUserCache, SESSION_VERSION_CLAIM, sessionCookieName } from "./session";
import { startTestServer, type TestServer } from "./testing/http-server";

// Console sessions and cross-site protection over real HTTP: a next-auth session cookie (minted
// with next-auth's own encoder and the server's secret), read by createSessionReader exactly as
// the console's /api/trpc route does.
const db = useTestDatabase();
const SECRET = "test-secret-for-console-sessions";
let server: TestServer;
let origin: string;
let viewerId: string;
let operatorId: string;
let producerKey: string;

/** A session cookie as next-auth issues it at sign-in: the user and its current session version. */
const cookieFor = async (userId: string, secret = SECRET, version?: number) => {
  const sv = version ?? (await getActiveUser(db.prisma, userId))?.sessionVersion ?? 0;
  return `${sessionCookieName(false)}=${await encode({ token: { sub: userId, email: "x@example.com", [SESSION_VERSION_CLAIM]: sv }, secret })}`;
};
// Sessions' users are cached per process for this long (the console uses a few seconds).
const CACHE_MS = 300;
const pastCache = () => new Promise((resolve) => setTimeout(resolve, CACHE_MS + 100));

beforeAll(async () => {
  await controlPlane(db.pool, { pool: "cs-pool", queues: [{ id: "cs-q" }], tenants: [{ id: "cs_t" }] });
  viewerId = (await createUser(db.prisma, { email: "viewer@example.com", role: "viewer", password: "viewer-password-1", actor: "test" })).id;
  operatorId = (await createUser(db.prisma, { email: "operator@example.com", role: "operator", password: "operator-password-1", actor: "test" })).id;
  await createUser(db.prisma, { email: "admin@example.com", role: "admin", password: "admin-password-12", actor: "test" });
  producerKey = (await createApiKey(db.prisma, { tenantIds: ["cs_t"], jobTypes: ["*"], actor: "test" })).key;
  server = await startTestServer({
    db: db.appPool,
    policyCache: new PolicyCache(),
    getSession: createSessionReader({ prisma: db.appPrisma, secret: SECRET, cache: createSessionUserCache({ ttlMs: CACHE_MS }) }),
  });
  origin = server.url;
});
afterAll(async () => {
  await server?.close();
});

/** A tRPC reply as these checks read it: data on success, the error on a refusal. */
type Reply = { status: number; body: { result: { data: Record<string, unknown> }; error: { message: string } } };
const request = async (path: string, init: { method?: string; headers?: Record<string, string>; body?: string }): Promise<Reply> => {
  const res = await fetch(`${server.url}/api/trpc/${path}`, init);
  return { status: res.status, body: (await res.json()) as Reply["body"] };
};
const pause = (headers: Record<string, string>, body = JSON.stringify({ id: "cs-q" })) => request("queues.pause", { method: "POST", headers, body });
const isPaused = async () => (await db.pool.query<{ paused: boolean }>(`SELECT paused FROM queues WHERE id = 'cs-q'`)).rows[0]!.paused;
const resume = () => db.pool.query(`UPDATE queues SET paused = false WHERE id = 'cs-q'`);

describe("console sessions", () => {
  it("a valid session cookie signs the user in; the role comes from the database", async () => {
    const me = await request("me.get", { headers: { cookie: await cookieFor(viewerId) } });
    expect(me.status).toBe(200);
    expect(me.body.result.data).toEqual({ email: "viewer@example.com", name: "", role: "viewer" });
  });

  it("no cookie, a cookie under another secret, or a garbled one: 401", async () => {
    expect((await request("me.get", {})).status).toBe(401);
    expect((await request("me.get", { headers: { cookie: await cookieFor(viewerId, "another-secret") } })).status).toBe(401);
    expect((await request("me.get", { headers: { cookie: `${sessionCookieName(false)}=garbage` } })).status).toBe(401);
  });

  it("a session token sent as a Bearer header is not a session (cookies only)", async () => {
    const token = (await cookieFor(viewerId)).split("=")[1]!;
    expect((await request("me.get", { headers: { authorization: `Bearer ${token}` } })).status).toBe(401);
  });

  it("a token without a session version (issued before revocable sessions) is not a session", async () => {
    const legacy = `${sessionCookieName(false)}=${await encode({ token: { sub: viewerId, email: "viewer@example.com" }, secret: SECRET })}`;
    expect((await request("me.get", { headers: { cookie: legacy } })).status).toBe(401);
  });
});

describe("ending sessions (issue 9, defect 6)", () => {
  const newUser = async (email: string, role: "operator" | "admin" = "operator") =>
    (await createUser(db.prisma, { email, role, password: "temp-password-12", actor: "test" })).id;
  const meStatus = async (cookie: string) => (await request("me.get", { headers: { cookie } })).status;

  const events: Array<[string, (userId: string) => Promise<unknown>]> = [
    ["sign-out", (id) => endUserSessions(db.prisma, id)],
    ["a password reset by an admin", (id) => updateUser(db.prisma, { id, patch: { password: "a-new-password-123" }, actor: "user:admin@example.com" })],
    ["a role change", (id) => updateUser(db.prisma, { id, patch: { role: "viewer" }, actor: "user:admin@example.com" })],
    ["disabling the account", (id) => updateUser(db.prisma, { id, patch: { disabled: true }, actor: "user:admin@example.com" })],
  ];
  it.each(events)("after %s, a cookie issued before gets 401 and changes nothing", async (label, end) => {
    const userId = await newUser(`end-${label.replace(/\W+/g, "-")}@example.com`);
    const cookie = await cookieFor(userId);
    const headers = { cookie, "content-type": "application/json", origin };
    expect(await meStatus(cookie)).toBe(200);
    expect((await pause(headers)).status).toBe(200);
    await resume();
    await end(userId);
    await pastCache();
    expect(await meStatus(cookie)).toBe(401);
    expect((await pause(headers)).status).toBe(401);
    expect(await isPaused()).toBe(false);
  });

  it("signing in again right after a sign-out works at once, though the old version is still cached", async () => {
    const userId = await newUser("again@example.com");
    const old = await cookieFor(userId);
    expect(await meStatus(old)).toBe(200); // caches the user at the old version
    await endUserSessions(db.prisma, userId);
    const fresh = await cookieFor(userId);
    expect(await meStatus(fresh)).toBe(200);
    expect(await meStatus(old)).toBe(401);
  });

  it("a new sign-in after the change works (with the new role), the old cookie still does not", async () => {
    const userId = await newUser("resign@example.com");
    const old = await cookieFor(userId);
    await updateUser(db.prisma, { id: userId, patch: { role: "viewer" }, actor: "test" });
    await pastCache();
    const fresh = await cookieFor(userId);
    expect(await meStatus(old)).toBe(401);
    const me = await request("me.get", { headers: { cookie: fresh } });
    expect(me.status).toBe(200);
    expect(me.body.result.data.role).toBe("viewer");
    // A rename does not end sessions.
    await updateUser(db.prisma, { id: userId, patch: { name: "Renamed" }, actor: "test" });
    await pastCache();
    expect(await meStatus(fresh)).toBe(200);
  });
});

describe("cross-site protection of console mutations", () => {
  it("a same-origin JSON mutation with the session cookie is carried out", async () => {
    const reply = await pause({ cookie: await cookieFor(operatorId), "content-type": "application/json", origin, "sec-fetch-site": "same-origin" });
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    expect(await isPaused()).toBe(true);
    await resume();
  });

  it("refuses (403) a mutation from another origin, a cross-site fetch, or one without an Origin; nothing changes", async () => {
    const cookie = await cookieFor(operatorId);
    const cases: Array<Record<string, string>> = [
      { cookie, "content-type": "application/json", origin: "https://evil.example" },
      { cookie, "content-type": "application/json", origin, "sec-fetch-site": "cross-site" },
      { cookie, "content-type": "application/json", origin, "sec-fetch-site": "same-site" },
      { cookie, "content-type": "application/json" },
      { cookie, "content-type": "application/json", origin: "null" },
    ];
    for (const headers of cases) {
      const reply = await pause(headers);
      expect(reply.status, JSON.stringify(headers)).toBe(403);
      expect(reply.body.error.message).toMatch(/cross-site|Origin/);
    }
    expect(await isPaused()).toBe(false);
  });

  it("refuses a form-encoded or text/plain body (what a cross-site HTML form can send); nothing changes", async () => {
    const cookie = await cookieFor(operatorId);
    for (const contentType of ["text/plain", "application/x-www-form-urlencoded"]) {
      const reply = await pause({ cookie, "content-type": contentType, origin });
      expect([403, 415], `${contentType}: ${JSON.stringify(reply.body)}`).toContain(reply.status);
    }
    expect(await isPaused()).toBe(false);
  });

  it("a producer's Bearer-key call needs no Origin (keys are not ambient credentials)", async () => {
    const reply = await request("producer.enqueue", {
      method: "POST",
      headers: { authorization: `Bearer ${producerKey}`, "content-type": "application/json" },
      body: JSON.stringify({ job_type: "cs-q.job", payload: { ref: "r" }, idempotency_key: "cs-1" }),
    });
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
  });

  it("queries are not subject to the Origin check (they change nothing)", async () => {
    const reply = await request("queues.list", { headers: { cookie: await cookieFor(viewerId), origin: "https://evil.example" } });
    expect(reply.status).toBe(200);
  });
});
