// Issue 12, deliverable 4: alert rules on dead jobs, evaluated as the maintenance leader does it.
// Deaths are real (enqueue → claim → failJobs, so the DLQ triggers fill dlq_deaths and
// dlq_groups); the clock moves through `now`. Each test works in its own queue (and its deaths at
// their own fake time), so rules of one test never see another's deaths.
import { randomUUID } from "node:crypto";
import type { TJobError } from "@porter/contracts";
import { useTestDatabase } from "@porter/db/testing/test-database";
import { beforeAll, describe, expect, it } from "vitest";
import { claimJobs } from "../sql/claim-jobs";
import { enqueueJobs } from "../sql/enqueue-jobs";
import { failJobs } from "../sql/fail-jobs";
import { controlPlane } from "../testing/control-plane-factory";
import { deleteAlertRule, listAlerts, saveAlertRule } from "./alert-rules";
import { evaluateAlerts, GLOBAL_SUBJECT } from "./alerts";
import { setAlertWebhook } from "./webhook-endpoint";

const db = useTestDatabase();
const QUEUES = ["qa", "qb", "qc", "qd", "qe"];
const MIN = 60_000;

beforeAll(async () => {
  await controlPlane(db.pool, { pool: "p1", queues: QUEUES.map((id) => ({ id, max_attempts: 1, default_max_attempts: 1 })) });
  // The notifications queue is in another pool, so the deaths' claims never take a delivery job.
  await controlPlane(db.pool, { pool: "p-notify", queues: [{ id: "notify" }], jobTypes: [{ id: "webhook.deliver", queue: "notify" }], tenants: ["tenant_N"] });
});

const error = (message: string): TJobError => ({
  code: "UPSTREAM",
  class: "permanent",
  message,
  worker_version: "test",
  attempt: 1,
  trace_id: "t",
  last_checkpoint: null,
});

/** `n` jobs of `queue` that die at `at` with `message` (one failure group per queue and message). */
const kill = async (queue: string, n: number, at: Date, message = `upstream refused order ${Math.floor(Math.random() * 1e6)}`): Promise<string[]> => {
  const results = await enqueueJobs(
    db.pool,
    Array.from({ length: n }, () => ({ job_type: `${queue}.job`, tenant_id: "tenant_A", payload: { x: 1 }, idempotency_key: randomUUID() })),
  );
  const ids = new Set(results.map((r) => r.job_id));
  const claimed = (await claimJobs(db.pool, { poolId: "p1", workerId: "w1", limit: 1000 })).filter((c) => ids.has(c.jobId));
  expect(claimed).toHaveLength(n);
  const outcome = await failJobs(
    db.pool,
    claimed.map((c) => ({
      id: c.id,
      leaseToken: c.leaseToken,
      attempt: c.attempt,
      outcome: "failed" as const,
      error: error(message),
      next: { state: "DEAD" as const },
    })),
    at,
  );
  expect(outcome.applied).toHaveLength(n);
  return [...ids];
};

const alertsOf = async (ruleId: string) =>
  (
    await db.pool.query<{ id: string; subject: string; state: string; value: number; resolved_at: Date | null }>(
      `SELECT id::text, subject, state, value, resolved_at FROM alerts WHERE rule_id = $1 ORDER BY id`,
      [ruleId],
    )
  ).rows;

const deliveries = async (alertIds: string[]) =>
  (
    await db.pool.query<{
      idempotency_key: string;
      tenant_id: string;
      payload: { endpoint_ref: string; event: { id: string; type: string; data: Record<string, unknown> } };
    }>(
      `SELECT idempotency_key, tenant_id, payload FROM jobs
        WHERE job_type = 'webhook.deliver' AND idempotency_key LIKE ANY($1::text[]) ORDER BY idempotency_key`,
      [alertIds.map((id) => `alert:${id}:%`)],
    )
  ).rows;

const rule = (queue: string | null, kind: "deaths_5m" | "unowned_age" | "group_reopened", threshold: number) =>
  saveAlertRule(db.appPrisma, { input: { queue_id: queue, kind, threshold, enabled: true }, actor: "test" });

describe("alert rules", () => {
  it("deaths_5m fires above the threshold, once per rule and subject, and resolves when the 5 minutes pass; one delivery per transition", async () => {
    await setAlertWebhook(db.appPrisma, { url: "https://hooks.example.com/porter", tenantId: "tenant_N", enabled: true, rotateSecret: false, actor: "test" });
    const t0 = new Date("2031-03-01T10:00:00Z");
    const perQueue = await rule("qa", "deaths_5m", 2);
    await kill("qa", 2, t0);
    // Two deaths: not above 2.
    expect((await evaluateAlerts(db.appPool, { now: new Date(t0.getTime() + MIN) })).fired).toEqual([]);
    await kill("qa", 1, new Date(t0.getTime() + MIN));

    const first = await evaluateAlerts(db.appPool, { now: new Date(t0.getTime() + 2 * MIN) });
    const again = await evaluateAlerts(db.appPool, { now: new Date(t0.getTime() + 2 * MIN + 15_000) });
    const alerts = await alertsOf(perQueue.id);
    expect(alerts).toEqual([{ id: expect.any(String), subject: "qa", state: "firing", value: 3, resolved_at: null }]);
    expect(first.fired).toEqual([alerts[0]!.id]);
    expect(again.fired).toEqual([]);
    expect(first.deliveries).toBe(1);
    let jobs = await deliveries([alerts[0]!.id]);
    expect(jobs).toHaveLength(1);
    expect(jobs[0]).toMatchObject({
      idempotency_key: `alert:${alerts[0]!.id}:firing`,
      tenant_id: "tenant_N",
      payload: {
        endpoint_ref: "webhook_endpoint:alerts",
        event: {
          id: `alert_${alerts[0]!.id}_firing`,
          type: "alert.firing",
          data: { kind: "deaths_5m", queue_id: "qa", subject: "qa", value: 3, threshold: 2 },
        },
      },
    });
    expect(JSON.stringify(jobs[0]!.payload)).not.toContain("whsec_");
    const listed = await listAlerts(db.appPrisma, { state: "firing", limit: 50 });
    expect(listed.alerts.map((a) => a.id)).toContain(alerts[0]!.id);
    expect(listed.firing).toBeGreaterThanOrEqual(1);

    // The first two deaths leave the window at t0 + 5 min; the third at t0 + 6 min.
    expect((await evaluateAlerts(db.appPool, { now: new Date(t0.getTime() + 5 * MIN + 1000) })).resolved).toEqual([alerts[0]!.id]);
    expect((await evaluateAlerts(db.appPool, { now: new Date(t0.getTime() + 5 * MIN + 2000) })).resolved).toEqual([]);
    expect(await alertsOf(perQueue.id)).toEqual([{ ...alerts[0], state: "resolved", resolved_at: new Date(t0.getTime() + 5 * MIN + 1000) }]);
    jobs = await deliveries([alerts[0]!.id]);
    expect(jobs.map((j) => [j.idempotency_key, j.payload.event.type])).toEqual([
      [`alert:${alerts[0]!.id}:firing`, "alert.firing"],
      [`alert:${alerts[0]!.id}:resolved`, "alert.resolved"],
    ]);
    await deleteAlertRule(db.appPrisma, { id: perQueue.id, actor: "test" });
    expect(await alertsOf(perQueue.id)).toEqual([]);
  });

  it("concurrent passes (two leaders for a moment) make one alert and one delivery", async () => {
    const t0 = new Date("2031-06-01T10:00:00Z");
    const r = await rule("qc", "deaths_5m", 0);
    await kill("qc", 1, t0);
    const at = new Date(t0.getTime() + 1000);
    const reports = await Promise.all([1, 2, 3].map(() => evaluateAlerts(db.appPool, { now: at })));
    const alerts = await alertsOf(r.id);
    expect(alerts).toHaveLength(1);
    expect(reports.flatMap((x) => x.fired)).toEqual([alerts[0]!.id]);
    expect(await deliveries([alerts[0]!.id])).toHaveLength(1);
    await deleteAlertRule(db.appPrisma, { id: r.id, actor: "test" });
  });

  it("a global deaths_5m rule counts every queue's deaths under the subject *", async () => {
    const t0 = new Date("2031-04-01T10:00:00Z");
    const global = await rule(null, "deaths_5m", 3);
    await kill("qb", 2, t0);
    await kill("qc", 2, t0);
    const report = await evaluateAlerts(db.appPool, { now: new Date(t0.getTime() + 1000) });
    expect(await alertsOf(global.id)).toEqual([{ id: report.fired[0], subject: GLOBAL_SUBJECT, state: "firing", value: 4, resolved_at: null }]);
    await deleteAlertRule(db.appPrisma, { id: global.id, actor: "test" });
  });

  it("unowned_age fires once an unowned group's oldest dead job is older than the threshold, and resolves when the group gets an owner", async () => {
    const died = new Date(Date.now() - 10 * MIN);
    const unowned = await rule("qd", "unowned_age", 900);
    await kill("qd", 2, died, "ledger write failed for account 12345");
    expect((await evaluateAlerts(db.appPool, { now: new Date(died.getTime() + 899_000) })).fired).toEqual([]);
    const later = new Date(died.getTime() + 1000 * MIN);
    const fired = await evaluateAlerts(db.appPool, { now: later });
    expect(await alertsOf(unowned.id)).toEqual([{ id: fired.fired[0], subject: "qd", state: "firing", value: 60_000, resolved_at: null }]);

    await db.pool.query(`INSERT INTO users (id, email, password_hash, role) VALUES ('u-oncall', 'oncall@example.com', 'x', 'operator')`);
    await db.pool.query(
      `UPDATE dlq_groups g SET owner_id = 'u-oncall' WHERE EXISTS (SELECT 1 FROM dlq_deaths d WHERE d.group_id = g.id AND d.queue_id = 'qd')`,
    );
    const resolved = await evaluateAlerts(db.appPool, { now: new Date(later.getTime() + 15_000) });
    expect(resolved.resolved).toEqual(fired.fired);
    expect((await alertsOf(unowned.id))[0]).toMatchObject({ state: "resolved" });
  });

  it("group_reopened fires for a regression (subject: the group) within its window, and resolves after it", async () => {
    const reopened = await rule("qe", "group_reopened", 3600);
    const message = "TLS handshake with payments failed after 3 attempts";
    const [first] = await kill("qe", 1, new Date(), message);
    const { rows } = await db.pool.query<{ group_id: string }>(`SELECT group_id::text FROM dlq_deaths WHERE job_id = $1`, [first]);
    const groupId = rows[0]!.group_id;
    await db.pool.query(`UPDATE dlq_groups SET status = 'resolved' WHERE id = $1`, [groupId]);
    // Not a regression yet.
    await evaluateAlerts(db.appPool);
    expect(await alertsOf(reopened.id)).toEqual([]);
    await kill("qe", 1, new Date(), message.replace("3", "4"));
    const { rows: groups } = await db.pool.query<{ is_regression: boolean; reopened_at: Date }>(
      `SELECT is_regression, reopened_at FROM dlq_groups WHERE id = $1`,
      [groupId],
    );
    expect(groups[0]!.is_regression).toBe(true);

    const fired = await evaluateAlerts(db.appPool);
    expect(await alertsOf(reopened.id)).toEqual([{ id: fired.fired[0], subject: groupId, state: "firing", value: expect.any(Number), resolved_at: null }]);
    const after = new Date(groups[0]!.reopened_at.getTime() + 3601_000);
    expect((await evaluateAlerts(db.appPool, { now: after })).resolved).toEqual(fired.fired);
  });

  it("without webhook.deliver in the registry the transition is kept and counted undeliverable; a disabled rule's alert resolves", async () => {
    await db.pool.query(`UPDATE job_types SET id = 'webhook.deliver.off' WHERE id = 'webhook.deliver'`);
    try {
      const t0 = new Date("2031-05-01T10:00:00Z");
      const r = await rule("qa", "deaths_5m", 0);
      await kill("qa", 1, t0);
      const report = await evaluateAlerts(db.appPool, { now: new Date(t0.getTime() + 1000) });
      expect(report).toMatchObject({ fired: [expect.any(String)], deliveries: 0, undeliverable: 1 });
      expect(await alertsOf(r.id)).toHaveLength(1);
      expect(await deliveries(report.fired)).toEqual([]);

      await saveAlertRule(db.appPrisma, { input: { id: r.id, queue_id: "qa", kind: "deaths_5m", threshold: 0, enabled: false }, actor: "test" });
      const off = await evaluateAlerts(db.appPool, { now: new Date(t0.getTime() + 2000) });
      expect(off.resolved).toEqual(report.fired);
    } finally {
      await db.pool.query(`UPDATE job_types SET id = 'webhook.deliver' WHERE id = 'webhook.deliver.off'`);
    }
  });

  it("refuses a rule of an unknown queue (404), a zero window (400) and an unknown id (404); audits what it saves", async () => {
    const bad = (input: Parameters<typeof saveAlertRule>[1]["input"]) => saveAlertRule(db.appPrisma, { input, actor: "test" });
    await expect(bad({ queue_id: "nope", kind: "deaths_5m", threshold: 1, enabled: true })).rejects.toMatchObject({ code: "NOT_FOUND" });
    await expect(bad({ queue_id: null, kind: "group_reopened", threshold: 0, enabled: true })).rejects.toMatchObject({ code: "BAD_REQUEST" });
    await expect(bad({ id: "999999", queue_id: null, kind: "deaths_5m", threshold: 1, enabled: true })).rejects.toMatchObject({ code: "NOT_FOUND" });
    await expect(deleteAlertRule(db.appPrisma, { id: "999999", actor: "test" })).rejects.toMatchObject({ code: "NOT_FOUND" });
    const saved = await bad({ queue_id: "qb", kind: "unowned_age", threshold: 600, enabled: true });
    const { rows } = await db.pool.query(`SELECT action, actor, after FROM audit_log WHERE object_type = 'alert_rule' AND object_id = $1`, [saved.id]);
    expect(rows).toEqual([{ action: "alert_rule.create", actor: "test", after: saved }]);
    await deleteAlertRule(db.appPrisma, { id: saved.id, actor: "test" });
  });
});
