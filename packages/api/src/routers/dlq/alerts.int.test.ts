// dlq.alerts.* and dlq.webhook.* as the console calls them: rules saved and listed, the alerts
// list with its firing count, the webhook's secret shown once (then only its last 4), bad input
// refused with a typed 4xx and nothing written (no row, no audit).
import { controlPlane } from "@porter/core/testing/control-plane-factory";
import { useTestDatabase } from "@porter/db/testing/test-database";
import { TRPCError } from "@trpc/server";
import { beforeAll, describe, expect, it } from "vitest";
import { consoleCaller, sessionOf } from "../../testing/console";

const db = useTestDatabase();
const admin = () => consoleCaller(db.appPool, sessionOf("admin", "admin@example.com"));
const viewer = () => consoleCaller(db.appPool, sessionOf("viewer"));

beforeAll(async () => {
  await controlPlane(db.pool, { pool: "al-pool", queues: [{ id: "al-q" }], tenants: [{ id: "al_t" }] });
});

const count = async (sql: string) => Number((await db.pool.query<{ n: string }>(`SELECT count(*)::text AS n FROM (${sql}) s`)).rows[0]!.n);
const codeOf = async (call: Promise<unknown>) => {
  const error = await call.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(TRPCError);
  return (error as TRPCError).code;
};

describe("dlq alerts API", () => {
  it("rules: admin saves (defaults), updates and deletes, viewers read; each change audited", async () => {
    const created = await admin().dlq.alerts.saveRule({ kind: "deaths_5m", threshold: 10 });
    expect(created).toEqual({ id: expect.any(String), queue_id: null, kind: "deaths_5m", threshold: 10, enabled: true });
    const updated = await admin().dlq.alerts.saveRule({ id: created.id, queue_id: "al-q", kind: "deaths_5m", threshold: 3, enabled: false });
    expect(updated).toEqual({ ...created, queue_id: "al-q", threshold: 3, enabled: false });
    expect((await viewer().dlq.alerts.rules({})).rules).toEqual([updated]);
    expect(await admin().dlq.alerts.deleteRule({ id: created.id })).toEqual({ id: created.id });
    expect((await viewer().dlq.alerts.rules()).rules).toEqual([]);
    const { rows } = await db.pool.query(`SELECT action, actor FROM audit_log WHERE object_type = 'alert_rule' ORDER BY id`);
    expect(rows).toEqual(["alert_rule.create", "alert_rule.update", "alert_rule.delete"].map((action) => ({ action, actor: "user:admin@example.com" })));
  });

  it("list: alerts newest first with the firing count, paged", async () => {
    const rule = await admin().dlq.alerts.saveRule({ kind: "group_reopened", threshold: 3600 });
    await db.pool.query(
      `INSERT INTO alerts (rule_id, subject, state, value, message, fired_at, resolved_at, updated_at)
       VALUES ($1, '1', 'resolved', 5, 'old', now() - interval '2 hours', now() - interval '1 hour', now()),
              ($1, '2', 'firing', 7, 'new', now(), NULL, now())`,
      [rule.id],
    );
    const page = await viewer().dlq.alerts.list({ limit: 1 });
    expect(page).toMatchObject({
      firing: 1,
      next_cursor: "1",
      alerts: [{ subject: "2", state: "firing", kind: "group_reopened", queue_id: null, message: "new" }],
    });
    expect((await viewer().dlq.alerts.list({ limit: 1, cursor: "1" })).alerts.map((a) => a.subject)).toEqual(["1"]);
    expect((await viewer().dlq.alerts.list({ state: "resolved" })).alerts.map((a) => a.subject)).toEqual(["1"]);
  });

  it("webhook: set returns the secret once (a Standard Webhooks key), get only its last 4; rotate makes a new one; delete", async () => {
    expect(await admin().dlq.webhook.get({})).toBeNull();
    const set = await admin().dlq.webhook.set({ url: "https://hooks.example.com/a", tenant_id: "al_t" });
    expect(set.secret).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/);
    expect(Buffer.from(set.secret.slice(6), "base64")).toHaveLength(24);
    const got = await admin().dlq.webhook.get({});
    expect(got).toEqual({
      id: "alerts",
      url: "https://hooks.example.com/a",
      tenant_id: "al_t",
      enabled: true,
      secret_hint: `…${set.secret.slice(-4)}`,
      updated_at: expect.any(String),
    });
    expect(JSON.stringify(got)).not.toContain(set.secret.slice(6, 20));

    const kept = await admin().dlq.webhook.set({ url: "https://hooks.example.com/b", tenant_id: "al_t", enabled: false });
    expect(kept).toMatchObject({ url: "https://hooks.example.com/b", enabled: false, secret: "", secret_hint: got!.secret_hint });
    const rotated = await admin().dlq.webhook.set({ url: "https://hooks.example.com/b", tenant_id: "al_t", rotate_secret: true });
    expect(rotated.secret).toMatch(/^whsec_/);
    expect(rotated.secret).not.toBe(set.secret);
    const { rows } = await db.pool.query(`SELECT action, after::text FROM audit_log WHERE object_type = 'webhook_endpoint' ORDER BY id`);
    expect(rows.map((r) => r.action)).toEqual(["webhook_endpoint.set", "webhook_endpoint.set", "webhook_endpoint.set"]);
    for (const r of rows) for (const s of [set.secret, rotated.secret]) expect(r.after).not.toContain(s.slice(6));

    expect(await admin().dlq.webhook.delete({})).toEqual({ deleted: true });
    expect(await admin().dlq.webhook.delete({})).toEqual({ deleted: false });
    expect(await admin().dlq.webhook.get({})).toBeNull();
  });

  it("bad input: a typed 4xx and nothing written", async () => {
    const before = await count(`SELECT 1 FROM audit_log`);
    expect(await codeOf(admin().dlq.webhook.set({ url: "http://hooks.example.com/a", tenant_id: "al_t" }))).toBe("BAD_REQUEST");
    expect(await codeOf(admin().dlq.webhook.set({ url: "https://hooks.example.com/a", tenant_id: "nobody" }))).toBe("NOT_FOUND");
    expect(await codeOf(admin().dlq.alerts.saveRule({ queue_id: "no-such-queue", kind: "deaths_5m", threshold: 1 }))).toBe("NOT_FOUND");
    expect(await codeOf(admin().dlq.alerts.saveRule({ kind: "unowned_age", threshold: 0 }))).toBe("BAD_REQUEST");
    expect(await codeOf(admin().dlq.alerts.saveRule({ kind: "deaths_5m", threshold: -1 }))).toBe("BAD_REQUEST");
    expect(await codeOf(admin().dlq.alerts.saveRule({ kind: "nope" as "deaths_5m", threshold: 1 }))).toBe("BAD_REQUEST");
    expect(await codeOf(admin().dlq.alerts.saveRule({ id: "123456", kind: "deaths_5m", threshold: 1 }))).toBe("NOT_FOUND");
    expect(await codeOf(admin().dlq.alerts.deleteRule({ id: "0" }))).toBe("BAD_REQUEST");
    expect(await codeOf(admin().dlq.alerts.list({ limit: 1, cursor: "-1" }))).toBe("BAD_REQUEST");
    expect(await count(`SELECT 1 FROM audit_log`)).toBe(before);
    expect(await count(`SELECT 1 FROM webhook_endpoints`)).toBe(0);
    expect(await codeOf(viewer().dlq.webhook.get({}))).toBe("FORBIDDEN");
  });
});
