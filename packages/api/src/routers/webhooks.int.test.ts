// webhooks.* as the console calls them: an operator adds, rotates and deletes (each secret in one
// response only), viewers list and read the delivery log and are refused every change, the
// allow-list is admins' only; the SSRF guard's refusal is a 400 naming the address, nothing stored.
import { controlPlane } from "@porter/core/testing/control-plane-factory";
import { useTestDatabase } from "@porter/db/testing/test-database";
import { TRPCError } from "@trpc/server";
import { beforeAll, describe, expect, it } from "vitest";
import { consoleCaller, sessionOf } from "../testing/console";

const db = useTestDatabase();
const admin = () => consoleCaller(db.appPool, sessionOf("admin", "admin@example.com"));
const operator = () => consoleCaller(db.appPool, sessionOf("operator", "op@example.com"));
const viewer = () => consoleCaller(db.appPool, sessionOf("viewer"));

beforeAll(async () => {
  await controlPlane(db.pool, { pool: "wh-pool", queues: [{ id: "wh-q" }], tenants: [{ id: "wh_a" }, { id: "wh_b" }] });
});

const codeOf = async (call: Promise<unknown>) => {
  const error = await call.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(TRPCError);
  return (error as TRPCError).code;
};
const endpoints = async () => Number((await db.pool.query(`SELECT count(*)::int AS n FROM webhook_endpoints WHERE scope = 'tenant'`)).rows[0].n);

describe("webhooks API", () => {
  it("operators add, update, rotate and delete; viewers read; secrets appear once; audited", async () => {
    const created = await operator().webhooks.create({ tenant_id: "wh_a", url: "https://203.0.113.7/h", events: ["dead", "succeeded"], description: "orders" });
    expect(created).toMatchObject({
      tenant_id: "wh_a",
      events: ["succeeded", "dead"],
      description: "orders",
      enabled: true,
      secret: expect.stringMatching(/^whsec_/),
    });
    const listed = await viewer().webhooks.list({ tenant_id: "wh_a" });
    const { secret: _secret, ...view } = created;
    expect(listed).toEqual([view]);
    expect(view.secret_hint).toBe(`…${created.secret.slice(-4)}`);
    expect(await viewer().webhooks.list({ tenant_id: "wh_b" })).toEqual([]);

    expect(await codeOf(viewer().webhooks.create({ tenant_id: "wh_a", url: "https://203.0.113.7/x", events: ["dead"] }))).toBe("FORBIDDEN");
    expect(await codeOf(viewer().webhooks.update({ id: created.id, enabled: false }))).toBe("FORBIDDEN");
    expect(await codeOf(viewer().webhooks.rotateSecret({ id: created.id }))).toBe("FORBIDDEN");
    expect(await codeOf(viewer().webhooks.delete({ id: created.id }))).toBe("FORBIDDEN");

    expect(await operator().webhooks.update({ id: created.id, enabled: false, description: "" })).toMatchObject({ enabled: false, description: null });
    const rotated = await operator().webhooks.rotateSecret({ id: created.id, overlap_seconds: 600 });
    expect(rotated.secret).not.toBe(created.secret);
    expect(JSON.stringify(await viewer().webhooks.list({ tenant_id: "wh_a" }))).not.toContain("whsec_");
    expect(await viewer().webhooks.deliveries({ id: created.id })).toEqual({ items: [], next_cursor: null });
    expect(await operator().webhooks.delete({ id: created.id })).toEqual({ id: created.id, deleted: true });
    expect(await codeOf(viewer().webhooks.deliveries({ id: created.id }))).toBe("NOT_FOUND");

    const { rows } = await db.pool.query(
      `SELECT action, actor, (coalesce(before::text, '') || coalesce(after::text, '')) AS t FROM audit_log WHERE object_type = 'webhook_endpoint' ORDER BY id`,
    );
    expect(rows.map((r) => r.action)).toEqual([
      "webhook_endpoint.create",
      "webhook_endpoint.update",
      "webhook_endpoint.rotate_secret",
      "webhook_endpoint.delete",
    ]);
    expect(rows.every((r) => r.actor === "user:op@example.com" && !r.t.includes("whsec_"))).toBe(true);
  });

  it("the SSRF guard refuses internal addresses with a 400 that names them; the allow-list is admins' only", async () => {
    const before = await endpoints();
    const refused = operator().webhooks.create({ tenant_id: "wh_a", url: "https://169.254.169.254/latest", events: ["dead"] });
    await expect(refused).rejects.toMatchObject({
      code: "BAD_REQUEST",
      message: expect.stringContaining("169.254.169.254, a link-local (cloud metadata) address"),
    });
    expect(await endpoints()).toBe(before);
    expect(await codeOf(operator().webhooks.allowlist.add({ cidr: "169.254.169.254/32" }))).toBe("FORBIDDEN");
    expect(await codeOf(operator().webhooks.allowlist.list())).toBe("FORBIDDEN");
    expect(await admin().webhooks.allowlist.add({ cidr: "169.254.169.254/32", note: "test" })).toMatchObject({ cidr: "169.254.169.254/32", note: "test" });
    const ok = await operator().webhooks.create({ tenant_id: "wh_a", url: "https://169.254.169.254/latest", events: ["dead"] });
    expect(ok.id).toMatch(/^we_/);
    expect(await admin().webhooks.allowlist.remove({ cidr: "169.254.169.254/32" })).toEqual({ cidr: "169.254.169.254/32", removed: true });
    expect(await codeOf(admin().webhooks.allowlist.remove({ cidr: "169.254.169.254/32" }))).toBe("NOT_FOUND");
    expect(await codeOf(operator().webhooks.create({ tenant_id: "wh_a", url: "http://203.0.113.7/", events: ["dead"] }))).toBe("BAD_REQUEST");
    expect(await codeOf(operator().webhooks.create({ tenant_id: "wh_a", url: "https://203.0.113.7/", events: [] }))).toBe("BAD_REQUEST");
    expect(await codeOf(operator().webhooks.rotateSecret({ id: ok.id, overlap_seconds: 8 * 86400 }))).toBe("BAD_REQUEST");
  });
});
