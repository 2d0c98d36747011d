// Tenant webhooks in core (issue 13): the SSRF guard when an endpoint is saved, the finished_jobs
// outbox trigger (only subscribed tenants, never webhook.deliver, statement-level, cheap with no
// endpoints) and the drain: exactly one delivery job per (endpoint, job, state) under concurrent
// deaths and concurrent drains. Rotation, deliveries and the allow-list's audit.
import { AppError } from "@porter/contracts";
import { useTestDatabase } from "@porter/db/testing/test-database";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { setAlertWebhook } from "../dlq/webhook-endpoint";
import { controlPlane } from "../testing/control-plane-factory";
import { prepareDeaths } from "../testing/dlq-fixtures";
import { addAllowedNetwork, listAllowedNetworks, removeAllowedNetwork } from "./allowlist";
import { listWebhookDeliveries, pruneWebhookDeliveries, recordWebhookDelivery } from "./deliveries";
import { createTenantWebhook, deleteTenantWebhook, listTenantWebhooks, rotateTenantWebhookSecret, updateTenantWebhook } from "./endpoints";
import { drainWebhookOutbox } from "./outbox";

const db = useTestDatabase();

const codeOf = async (p: Promise<unknown>) => {
  try {
    await p;
    return "OK";
  } catch (error) {
    return error instanceof AppError ? error.code : `THREW ${String(error)}`;
  }
};
const messageOf = async (p: Promise<unknown>) =>
  p.then(
    () => "OK",
    (e: Error) => e.message,
  );
const outboxCount = async () => (await db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM webhook_outbox`)).rows[0]!.n;
const PUBLIC = "https://203.0.113.7/hook";

beforeAll(async () => {
  await controlPlane(db.pool, {
    pool: "p1",
    queues: [{ id: "orders", max_attempts: 1, default_max_attempts: 1 }],
    jobTypes: [
      { id: "orders.job", queue: "orders" },
      { id: "webhook.deliver", queue: "orders" },
    ],
    tenants: ["t_sub", "t_none", "t_off", "t_other"],
  });
  await controlPlane(db.pool, {
    pool: "p_hooks",
    queues: [{ id: "hooks", max_attempts: 1, default_max_attempts: 1 }],
    jobTypes: [{ id: "hooks.job", queue: "hooks" }],
  });
});

afterAll(async () => {
  await db.pool.query(`DELETE FROM webhook_allowed_networks`);
});

describe("saving an endpoint: the SSRF guard", () => {
  const refused = [
    "https://127.0.0.1/h",
    "https://10.1.2.3/h",
    "https://169.254.169.254/latest/meta-data",
    "https://[::1]/h",
    "https://[::ffff:127.0.0.1]/h",
    "https://localhost/h",
  ];

  it.each(refused)("refuses %s without an allow-list (400 naming the address)", async (url) => {
    const p = createTenantWebhook(db.appPrisma, { tenantId: "t_other", url, events: ["dead"], actor: "test" });
    expect(await messageOf(p)).toMatch(/resolves to .*(loopback|private|link-local)/);
    expect(await codeOf(createTenantWebhook(db.appPrisma, { tenantId: "t_other", url, events: ["dead"], actor: "test" }))).toBe("BAD_REQUEST");
    // The alerts endpoint goes through the same guard.
    expect(await codeOf(setAlertWebhook(db.appPrisma, { url, tenantId: "t_other", enabled: true, rotateSecret: false, actor: "test" }))).toBe("BAD_REQUEST");
  });

  it("allows them once their networks are allow-listed (admins' list, audited), and refuses them again once removed", async () => {
    for (const cidr of ["127.0.0.0/8", "10.0.0.0/8", "169.254.169.254", "::1/128"])
      await addAllowedNetwork(db.appPrisma, { cidr, note: "test", actor: "admin@x" });
    expect((await listAllowedNetworks(db.appPrisma)).map((n) => n.cidr).sort()).toEqual(["10.0.0.0/8", "127.0.0.0/8", "169.254.169.254/32", "::1/128"]);
    const created: string[] = [];
    for (const url of refused) created.push((await createTenantWebhook(db.appPrisma, { tenantId: "t_other", url, events: ["dead"], actor: "test" })).id);
    const audit = await db.pool.query(`SELECT action, count(*)::int AS n FROM audit_log WHERE action LIKE 'webhook_%' GROUP BY action ORDER BY action`);
    expect(audit.rows).toEqual([
      { action: "webhook_endpoint.create", n: refused.length },
      { action: "webhook_network.allow", n: 4 },
    ]);
    // No secret in the audit log.
    expect(
      (await db.pool.query(`SELECT count(*)::int AS n FROM audit_log WHERE (coalesce(before, '{}')::text || coalesce(after, '{}')::text) LIKE '%whsec_%'`))
        .rows[0].n,
    ).toBe(0);
    for (const id of created) await deleteTenantWebhook(db.appPrisma, { id, actor: "test" });
    for (const cidr of ["127.0.0.0/8", "10.0.0.0/8", "169.254.169.254/32", "::1/128"]) await removeAllowedNetwork(db.appPrisma, { cidr, actor: "admin@x" });
    expect(await codeOf(createTenantWebhook(db.appPrisma, { tenantId: "t_other", url: refused[0]!, events: ["dead"], actor: "test" }))).toBe("BAD_REQUEST");
    expect(await codeOf(addAllowedNetwork(db.appPrisma, { cidr: "10.0.0.1/8", actor: "admin@x" }))).toBe("BAD_REQUEST");
    expect(await codeOf(removeAllowedNetwork(db.appPrisma, { cidr: "10.0.0.0/8", actor: "admin@x" }))).toBe("NOT_FOUND");
  });

  it("refuses http, no events, unknown events and unknown tenants", async () => {
    expect(await codeOf(createTenantWebhook(db.appPrisma, { tenantId: "t_other", url: "http://203.0.113.7/", events: ["dead"], actor: "t" }))).toBe(
      "BAD_REQUEST",
    );
    expect(await codeOf(createTenantWebhook(db.appPrisma, { tenantId: "t_other", url: PUBLIC, events: [], actor: "t" }))).toBe("BAD_REQUEST");
    expect(await codeOf(createTenantWebhook(db.appPrisma, { tenantId: "t_other", url: PUBLIC, events: ["retry_wait"], actor: "t" }))).toBe("BAD_REQUEST");
    expect(await codeOf(createTenantWebhook(db.appPrisma, { tenantId: "nobody", url: PUBLIC, events: ["dead"], actor: "t" }))).toBe("NOT_FOUND");
  });
});

describe("the outbox", () => {
  let sub: { id: string; secret: string };
  let subSucceeded: { id: string; secret: string };

  beforeAll(async () => {
    sub = await createTenantWebhook(db.appPrisma, { tenantId: "t_sub", url: PUBLIC, events: ["dead"], actor: "test" });
    subSucceeded = await createTenantWebhook(db.appPrisma, { tenantId: "t_sub", url: `${PUBLIC}/2`, events: ["succeeded", "dead"], actor: "test" });
    const off = await createTenantWebhook(db.appPrisma, { tenantId: "t_off", url: PUBLIC, events: ["dead"], actor: "test" });
    await updateTenantWebhook(db.appPrisma, { id: off.id, enabled: false, actor: "test" });
  });

  it("exactly one delivery job per (endpoint, job, state) under concurrent deaths on four connections and three concurrent drains", async () => {
    const sets = [];
    for (let k = 0; k < 4; k++)
      sets.push(await prepareDeaths(db.pool, { poolId: "p1", jobType: "orders.job", n: 25, tenant: () => "t_sub", message: (i) => `boom ${k}-${i}` }));
    // Each set fails in one statement on its own connection, all at once.
    await Promise.all(sets.map((s) => s.fail(db.pool)));
    const jobIds = sets.flatMap((s) => s.jobIds);
    expect(await outboxCount()).toBe(200);

    const reports = await Promise.all([
      drainWebhookOutbox(db.pool, { batch: 70 }),
      drainWebhookOutbox(db.pool, { batch: 70 }),
      drainWebhookOutbox(db.pool, { batch: 70 }),
    ]);
    let left = await outboxCount();
    while (left > 0) {
      reports.push(await drainWebhookOutbox(db.pool));
      left = await outboxCount();
    }
    expect(reports.reduce((n, r) => n + r.enqueued, 0)).toBe(200);
    expect(reports.flatMap((r) => r.errors)).toEqual([]);
    const { rows } = await db.pool.query<{ idempotency_key: string; tenant_id: string; n: number }>(
      `SELECT idempotency_key, tenant_id, count(*)::int AS n FROM jobs WHERE job_type = 'webhook.deliver' GROUP BY 1, 2`,
    );
    expect(rows).toHaveLength(200);
    expect(rows.every((r) => r.n === 1 && r.tenant_id === "t_sub")).toBe(true);
    const keys = new Set(rows.map((r) => r.idempotency_key));
    for (const jobId of jobIds) {
      expect(keys.has(`wh:${sub.id}:${jobId}:dead`)).toBe(true);
      expect(keys.has(`wh:${subSucceeded.id}:${jobId}:dead`)).toBe(true);
    }
    // A second drain finds nothing: nothing is sent twice.
    expect(await drainWebhookOutbox(db.pool)).toEqual({ enqueued: 0, duplicates: 0, errors: [] });
    const payload = (await db.pool.query(`SELECT payload FROM jobs WHERE idempotency_key = $1`, [`wh:${sub.id}:${jobIds[0]}:dead`])).rows[0].payload;
    expect(payload).toMatchObject({
      endpoint_ref: `webhook_endpoint:${sub.id}`,
      event: {
        id: `evt_${jobIds[0]!.replace(/-/g, "")}_dead`,
        type: "job.dead",
        data: { job_id: jobIds[0], tenant_id: "t_sub", status: "DEAD", failure: { class: expect.any(String), message: expect.stringMatching(/^boom /) } },
      },
    });
    // The same (endpoint, job, state) again — a drain that saw the row twice (a leader hand-over):
    // its key was used, so it is dropped, not sent twice.
    await db.pool.query(
      `INSERT INTO webhook_outbox (endpoint_id, job_id, state, job_type, tenant_id, attempt, finished_at)
       VALUES ($1, $2, 'DEAD', 'orders.job', 't_sub', 2, now())`,
      [sub.id, jobIds[0]],
    );
    expect(await drainWebhookOutbox(db.pool)).toEqual({ enqueued: 0, duplicates: 1, errors: [] });
    expect(await outboxCount()).toBe(0);
    // A redriven job that dies again is a new event: its own delivery, its own event id.
    await db.pool.query(
      `INSERT INTO webhook_outbox (endpoint_id, job_id, state, job_type, tenant_id, attempt, redrive_count, finished_at)
       VALUES ($1, $2, 'DEAD', 'orders.job', 't_sub', 2, 1, now())`,
      [sub.id, jobIds[0]],
    );
    expect(await drainWebhookOutbox(db.pool)).toEqual({ enqueued: 1, duplicates: 0, errors: [] });
    const again = (await db.pool.query(`SELECT payload FROM jobs WHERE idempotency_key = $1`, [`wh:${sub.id}:${jobIds[0]}:dead:r1`])).rows[0].payload;
    expect(again.event.id).toBe(`evt_${jobIds[0]!.replace(/-/g, "")}_dead_r1`);
    await db.pool.query(`DELETE FROM jobs WHERE job_type = 'webhook.deliver'`);
  });

  it("no outbox rows for tenants without (enabled, subscribed) endpoints, and never for webhook.deliver's own deaths", async () => {
    const none = await prepareDeaths(db.pool, { poolId: "p1", jobType: "orders.job", n: 5, tenant: () => "t_none", message: () => "x" });
    const off = await prepareDeaths(db.pool, { poolId: "p1", jobType: "orders.job", n: 5, tenant: () => "t_off", message: () => "x" });
    await none.fail();
    await off.fail();
    expect(await outboxCount()).toBe(0);
    // t_sub subscribes to deaths, but a dead webhook.deliver job is not an event (no loops).
    const deliveries = await prepareDeaths(db.pool, { poolId: "p1", jobType: "webhook.deliver", n: 3, tenant: () => "t_sub", message: () => "x" });
    await deliveries.fail();
    expect(await outboxCount()).toBe(0);
  });

  it("the trigger is one statement-level call, and with no enabled tenant endpoint it returns before reading the transition table", async () => {
    const explain = async () => {
      const client = await db.pool.connect();
      try {
        await client.query("BEGIN");
        const { rows } = await client.query<{ "QUERY PLAN": Array<{ Triggers: Array<{ "Trigger Name": string; Time: number; Calls: number }> }> }>(
          `EXPLAIN (ANALYZE, FORMAT JSON)
           INSERT INTO finished_jobs (id, job_id, job_type, queue_id, tenant_id, payload, priority, idempotency_key, state, attempt, max_attempts, timeout_s, run_at, trace_id, created_at, finished_at)
           SELECT g, gen_random_uuid(), 'orders.job', 'orders', 't_sub', '{}', 0, 'explain-' || g, 'SUCCEEDED', 1, 1, 30, now(), 't', now(), now()
             FROM generate_series(1, 2000) g`,
        );
        return rows[0]!["QUERY PLAN"][0]!.Triggers.find((t) => t["Trigger Name"] === "finished_jobs_webhook_outbox")!;
      } finally {
        await client.query("ROLLBACK");
        client.release();
      }
    };
    const withEndpoints = await explain();
    expect(withEndpoints.Calls).toBe(1);
    await db.pool.query(`UPDATE webhook_endpoints SET enabled = false WHERE scope = 'tenant'`);
    try {
      const without = await explain();
      expect(without.Calls).toBe(1);
      // One probe of webhook_endpoints; 2 000 finished rows cost it nothing.
      expect(without.Time).toBeLessThan(5);
    } finally {
      await db.pool.query(`UPDATE webhook_endpoints SET enabled = true WHERE scope = 'tenant' AND tenant_id = 't_sub'`);
    }
  });
});

describe("rotation, updates and the delivery log", () => {
  it("rotation keeps the previous secret for the overlap (default 24 h, at most 7 days); an update is guarded and audited", async () => {
    const e = await createTenantWebhook(db.appPrisma, { tenantId: "t_other", url: PUBLIC, events: ["succeeded"], description: "d", actor: "test" });
    const now = new Date();
    const r = await rotateTenantWebhookSecret(db.appPrisma, { id: e.id, actor: "test", now });
    expect(r.secret).not.toBe(e.secret);
    expect(r.previous_secret_expires_at).toBe(new Date(now.getTime() + 86400_000).toISOString());
    const row = (await db.pool.query(`SELECT secret, previous_secret FROM webhook_endpoints WHERE id = $1`, [e.id])).rows[0];
    expect(row).toEqual({ secret: r.secret, previous_secret: e.secret });
    expect(await codeOf(rotateTenantWebhookSecret(db.appPrisma, { id: e.id, overlapSeconds: 8 * 86400, actor: "test" }))).toBe("BAD_REQUEST");
    const none = await rotateTenantWebhookSecret(db.appPrisma, { id: e.id, overlapSeconds: 0, actor: "test" });
    expect(none.previous_secret_expires_at).toBeNull();
    expect(await codeOf(updateTenantWebhook(db.appPrisma, { id: e.id, url: "https://192.168.0.10/", actor: "test" }))).toBe("BAD_REQUEST");
    const updated = await updateTenantWebhook(db.appPrisma, { id: e.id, events: ["expired", "succeeded"], enabled: false, actor: "test" });
    expect(updated).toMatchObject({ events: ["succeeded", "expired"], enabled: false, description: "d", secret_hint: `…${none.secret.slice(-4)}` });
    expect((await listTenantWebhooks(db.appPrisma, "t_other")).map((w) => w.id)).toContain(e.id);
    expect(JSON.stringify(await listTenantWebhooks(db.appPrisma, "t_other"))).not.toContain("whsec_");
    // The alerts endpoint is not a tenant endpoint.
    expect(await codeOf(updateTenantWebhook(db.appPrisma, { id: "alerts", enabled: false, actor: "test" }))).toBe("NOT_FOUND");
  });

  it("lists an endpoint's attempts newest first by cursor, and prunes rows past 14 days", async () => {
    const e = await createTenantWebhook(db.appPrisma, { tenantId: "t_other", url: PUBLIC, events: ["dead"], actor: "test" });
    for (let attempt = 1; attempt <= 5; attempt++) {
      await recordWebhookDelivery(db.appPool, {
        endpointId: e.id,
        jobId: "0190a0b0-0000-7000-8000-000000000001",
        eventId: "evt_1",
        eventType: "job.dead",
        subjectJobId: "0190a0b0-0000-7000-8000-000000000002",
        attempt,
        statusCode: attempt < 5 ? 500 : 200,
        error: attempt < 5 ? "203.0.113.7 answered 500" : null,
        durationMs: 12.4,
      });
    }
    const first = await listWebhookDeliveries(db.appPrisma, { endpointId: e.id, limit: 2 });
    expect(first.items.map((i) => i.attempt)).toEqual([5, 4]);
    const second = await listWebhookDeliveries(db.appPrisma, { endpointId: e.id, limit: 2, cursor: first.next_cursor });
    expect(second.items.map((i) => i.attempt)).toEqual([3, 2]);
    const third = await listWebhookDeliveries(db.appPrisma, { endpointId: e.id, limit: 2, cursor: second.next_cursor });
    expect(third).toMatchObject({ items: [{ attempt: 1, status_code: 500, duration_ms: 12 }], next_cursor: null });
    await db.pool.query(`UPDATE webhook_deliveries SET at = now() - interval '15 days' WHERE endpoint_id = $1 AND attempt <= 2`, [e.id]);
    expect(await pruneWebhookDeliveries(db.appPool)).toBe(2);
    expect((await listWebhookDeliveries(db.appPrisma, { endpointId: e.id })).items).toHaveLength(3);
  });
});
