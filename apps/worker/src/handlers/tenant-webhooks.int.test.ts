// Issue 13, deliverable 5: tenant webhooks end to end — real deaths, successes and cancels of a
// tenant's jobs, the finished_jobs trigger, the maintenance leader's outbox drain, the real
// webhook.deliver handler in a real worker, and a real HTTPS receiver on 127.0.0.1 (a self-signed
// certificate trusted through `webhook.ca`; 127.0.0.1/32 allow-listed for the SSRF guard).
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import https from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TJobError } from "@porter/contracts";
import {
  addAllowedNetwork,
  cancelJob,
  claimJobs,
  completeJobs,
  createTenantWebhook,
  enqueueJobs,
  failJobs,
  removeAllowedNetwork,
  rotateTenantWebhookSecret,
} from "@porter/core";
import { controlPlane } from "@porter/core/testing/control-plane-factory";
import { writeSelfSignedCert } from "@porter/core/testing/self-signed-cert";
import { useTestDatabase } from "@porter/db/testing/test-database";
import { verifyWebhook, WebhookVerifyError } from "@porter/sdk";
import { Webhook, WebhookVerificationError } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../logger";
import { type StartedWorker, startWorker } from "../runtime/start-worker";
import { attemptsOf, jobRow, waitFor, waitForStates } from "../testing/fixtures";

const db = useTestDatabase();
const logger = createLogger({ level: "silent" });

type Received = { path: string; headers: Record<string, string>; body: string };
const received: Received[] = [];
/** What the receiver answers next, per path (then 200). */
const answers: Record<string, number[]> = { "/a": [], "/b": [] };

let dir: string;
let server: https.Server;
let origin: string;
let worker: StartedWorker;
let endpointA: { id: string; secret: string };
let endpointB: { id: string; secret: string };

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "porter-tenant-webhook-"));
  const tls = writeSelfSignedCert(dir);
  const cert = tls.cert;
  server = https.createServer({ key: tls.key, cert }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const path = new URL(req.url ?? "/", "https://x").pathname;
      received.push({
        path,
        headers: Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)])),
        body: Buffer.concat(chunks).toString("utf8"),
      });
      res.writeHead(answers[path]?.shift() ?? 200).end("ok");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  origin = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;

  await controlPlane(db.pool, {
    pool: "hooks",
    queues: [{ id: "notify", max_attempts: 3, default_max_attempts: 3, backoff_base_ms: 50, backoff_cap_ms: 100 }],
    jobTypes: [{ id: "webhook.deliver", queue: "notify" }],
    tenants: ["tenant_A", "tenant_B", "tenant_C"],
  });
  await controlPlane(db.pool, { pool: "apps", queues: [{ id: "orders", max_attempts: 1, default_max_attempts: 1 }] });
  await addAllowedNetwork(db.appPrisma, { cidr: "127.0.0.1/32", note: "the test's receiver", actor: "test" });
  endpointA = await createTenantWebhook(db.appPrisma, {
    tenantId: "tenant_A",
    url: `${origin}/a?token=subscriber-secret`,
    events: ["succeeded", "dead", "cancelled"],
    description: "A's receiver",
    actor: "test",
  });
  endpointB = await createTenantWebhook(db.appPrisma, { tenantId: "tenant_B", url: `${origin}/b`, events: ["dead"], actor: "test" });
  worker = await startWorker({
    connectionString: db.appConnectionString,
    pool: "hooks",
    logger,
    // The leader drains the outbox every tick (200 ms here).
    maintenance: { runEveryMs: 200, alertsEveryMs: 0 },
    concurrency: 4,
    webhook: { ca: cert },
  });
});

afterAll(async () => {
  await worker?.drain();
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

const error: TJobError = {
  code: "UPSTREAM",
  class: "permanent",
  message: "refused by https://internal.example/x",
  worker_version: "t",
  attempt: 1,
  trace_id: "t",
  last_checkpoint: null,
};

/** One orders job of `tenant` that ends `how` (enqueue → claim → ack / fail, or cancel while queued). */
const finish = async (tenant: string, how: "succeed" | "die" | "cancel"): Promise<string> => {
  const [r] = await enqueueJobs(db.pool, [{ job_type: "orders.job", tenant_id: tenant, payload: { n: randomUUID() }, idempotency_key: randomUUID() }]);
  const jobId = r!.job_id;
  if (how === "cancel") {
    await cancelJob(db.pool, { jobId, actor: "test" });
    return jobId;
  }
  const [c] = await claimJobs(db.pool, { poolId: "apps", workerId: "w", limit: 1 });
  expect(c?.jobId).toBe(jobId);
  if (how === "succeed") await completeJobs(db.pool, [{ id: c!.id, leaseToken: c!.leaseToken, attempt: 1, result: { charged: 42 } }]);
  else await failJobs(db.pool, [{ id: c!.id, leaseToken: c!.leaseToken, attempt: 1, outcome: "failed", error, next: { state: "DEAD" } }]);
  return jobId;
};

/** The delivery job of (endpoint, job, state), once the leader enqueued it. */
const deliveryOf = async (endpointId: string, jobId: string, state: string): Promise<string> => {
  const key = `wh:${endpointId}:${jobId}:${state}`;
  return waitFor(`the delivery job ${key}`, async () => {
    const { rows } = await db.pool.query<{ job_id: string }>(
      `SELECT job_id::text FROM jobs WHERE idempotency_key = $1 UNION ALL SELECT job_id::text FROM finished_jobs WHERE idempotency_key = $1`,
      [key],
    );
    expect(rows.length).toBeLessThanOrEqual(1);
    return rows[0]?.job_id;
  });
};

const bodyOf = (r: Received) => JSON.parse(r.body) as { type: string; data: Record<string, unknown> };
const forJob = (jobId: string) => received.filter((r) => bodyOf(r).data.job_id === jobId);
const logRows = async (deliveryJobId: string) =>
  (
    await db.pool.query<{
      attempt: number;
      status_code: number | null;
      error: string | null;
      subject_job_id: string | null;
      event_type: string;
      duration_ms: number;
    }>(`SELECT attempt, status_code, error, subject_job_id::text, event_type, duration_ms FROM webhook_deliveries WHERE job_id = $1 ORDER BY attempt`, [
      deliveryJobId,
    ])
  ).rows;

describe("tenant webhooks", () => {
  it("each terminal event reaches its tenant's endpoint once, signed: standardwebhooks and the SDK verify it, the other tenant's secret does not", async () => {
    const succeeded = await finish("tenant_A", "succeed");
    const dead = await finish("tenant_A", "die");
    const cancelled = await finish("tenant_A", "cancel");
    const deadB = await finish("tenant_B", "die");
    const deadC = await finish("tenant_C", "die"); // no endpoint: nothing queued
    const deliveries = [
      await deliveryOf(endpointA.id, succeeded, "succeeded"),
      await deliveryOf(endpointA.id, dead, "dead"),
      await deliveryOf(endpointA.id, cancelled, "cancelled"),
      await deliveryOf(endpointB.id, deadB, "dead"),
    ];
    await waitForStates(db.pool, deliveries, ["SUCCEEDED"]);
    // The delivery jobs run under the endpoint's tenant.
    const tenants = await db.pool.query(`SELECT tenant_id FROM finished_jobs WHERE job_id = ANY($1::uuid[]) ORDER BY array_position($1::uuid[], job_id)`, [
      deliveries,
    ]);
    expect(tenants.rows.map((r) => r.tenant_id)).toEqual(["tenant_A", "tenant_A", "tenant_A", "tenant_B"]);

    const toA = received.filter((r) => r.path === "/a");
    const toB = received.filter((r) => r.path === "/b");
    expect(toA.map((r) => bodyOf(r).type).sort()).toEqual(["job.cancelled", "job.dead", "job.succeeded"]);
    expect(toB.map((r) => bodyOf(r).data.job_id)).toEqual([deadB]);
    expect(received.some((r) => bodyOf(r).data.job_id === deadC)).toBe(false);
    for (const r of toA) {
      expect(bodyOf(r).data.tenant_id).toBe("tenant_A");
      expect(new Webhook(endpointA.secret).verify(r.body, r.headers)).toEqual(JSON.parse(r.body));
      expect(verifyWebhook(endpointA.secret, r.headers, r.body)).toEqual(JSON.parse(r.body));
      expect(() => new Webhook(endpointB.secret).verify(r.body, r.headers)).toThrow(WebhookVerificationError);
      expect(() => verifyWebhook(endpointB.secret, r.headers, r.body)).toThrow(WebhookVerifyError);
    }
    const ok = verifyWebhook(endpointA.secret, forJob(succeeded)[0]!.headers, forJob(succeeded)[0]!.body);
    expect(ok).toMatchObject({
      type: "job.succeeded",
      data: { job_id: succeeded, job_type: "orders.job", tenant_id: "tenant_A", status: "SUCCEEDED", attempt: 1, result: { charged: 42 }, failure: null },
    });
    const died = verifyWebhook(endpointA.secret, forJob(dead)[0]!.headers, forJob(dead)[0]!.body);
    expect(died).toMatchObject({ type: "job.dead", data: { status: "DEAD" } });
    expect(died.data.result).toBeUndefined();
    // The raw error never leaves: only its tenant-safe projection (code, class, the URL scrubbed).
    expect(died.data.failure).toEqual({ code: "UPSTREAM", class: "permanent", message: "refused by <url>" });
    expect(forJob(dead)[0]!.body).not.toContain("internal.example");
    expect(forJob(dead)[0]!.headers["webhook-id"]).toBe(`evt_${dead.replace(/-/g, "")}_dead`);

    // One log row per attempt: status, duration, the subject job.
    expect(await logRows(deliveries[0]!)).toEqual([
      { attempt: 1, status_code: 200, error: null, subject_job_id: succeeded, event_type: "job.succeeded", duration_ms: expect.any(Number) },
    ]);
    // Nothing left in the outbox, and nothing ever queued for tenant_C.
    expect((await db.pool.query(`SELECT count(*)::int AS n FROM webhook_outbox`)).rows[0].n).toBe(0);
  });

  it("a receiver answering 500 sees every attempt (same webhook-id), then the delivery is DEAD in the DLQ; that death sends no webhook", async () => {
    answers["/a"] = [500, 500, 500];
    const before = received.length;
    const dead = await finish("tenant_A", "die");
    const delivery = await deliveryOf(endpointA.id, dead, "dead");
    await waitForStates(db.pool, [delivery], ["DEAD"]);
    const attempts = forJob(dead);
    expect(attempts).toHaveLength(3);
    expect(new Set(attempts.map((a) => a.headers["webhook-id"])).size).toBe(1);
    expect((await attemptsOf(db.pool, delivery)).map((a) => [a.attempt, a.error?.code])).toEqual([
      [1, "WEBHOOK_UNAVAILABLE"],
      [2, "WEBHOOK_UNAVAILABLE"],
      [3, "WEBHOOK_UNAVAILABLE"],
    ]);
    const { rows } = await db.pool.query(`SELECT g.job_type, g.error_code FROM dlq_deaths d JOIN dlq_groups g ON g.id = d.group_id WHERE d.job_id = $1`, [
      delivery,
    ]);
    expect(rows).toEqual([{ job_type: "webhook.deliver", error_code: "WEBHOOK_UNAVAILABLE" }]);
    const log = await logRows(delivery);
    expect(log.map((l) => [l.attempt, l.status_code])).toEqual([
      [1, 500],
      [2, 500],
      [3, 500],
    ]);
    // The host only: never the URL's path or query.
    for (const l of log) expect(l.error).not.toMatch(/subscriber-secret|\/a/);
    // The delivery job died under tenant_A, whose endpoint subscribes to `dead`: no webhook about it.
    await new Promise((r) => setTimeout(r, 600));
    expect((await db.pool.query(`SELECT count(*)::int AS n FROM webhook_outbox`)).rows[0].n).toBe(0);
    expect(received.length - before).toBe(3);
  });

  it("during a rotation overlap both secrets verify (two signatures); after it only the new one", async () => {
    const old = endpointA.secret;
    const rotated = await rotateTenantWebhookSecret(db.appPrisma, { id: endpointA.id, overlapSeconds: 3600, actor: "test" });
    expect(rotated.secret).not.toBe(old);
    const during = await finish("tenant_A", "succeed");
    await waitForStates(db.pool, [await deliveryOf(endpointA.id, during, "succeeded")], ["SUCCEEDED"]);
    const r1 = forJob(during)[0]!;
    expect(r1.headers["webhook-signature"]!.split(" ")).toHaveLength(2);
    expect(new Webhook(old).verify(r1.body, r1.headers)).toBeTruthy();
    expect(new Webhook(rotated.secret).verify(r1.body, r1.headers)).toBeTruthy();
    expect(verifyWebhook(old, r1.headers, r1.body).data.job_id).toBe(during);
    expect(verifyWebhook([rotated.secret], r1.headers, r1.body).data.job_id).toBe(during);

    // The overlap ends (its end moved into the past): the old secret no longer signs.
    await db.pool.query(`UPDATE webhook_endpoints SET previous_secret_expires_at = now() - interval '1 second' WHERE id = $1`, [endpointA.id]);
    const after = await finish("tenant_A", "succeed");
    await waitForStates(db.pool, [await deliveryOf(endpointA.id, after, "succeeded")], ["SUCCEEDED"]);
    const r2 = forJob(after)[0]!;
    expect(r2.headers["webhook-signature"]!.split(" ")).toHaveLength(1);
    expect(new Webhook(rotated.secret).verify(r2.body, r2.headers)).toBeTruthy();
    expect(() => new Webhook(old).verify(r2.body, r2.headers)).toThrow(WebhookVerificationError);
    expect(() => verifyWebhook(old, r2.headers, r2.body)).toThrow(WebhookVerifyError);
    endpointA = { id: endpointA.id, secret: rotated.secret };
  });

  it("the SSRF guard at delivery time: with 127.0.0.1/32 no longer allowed, the delivery is refused (permanent), nothing is sent", async () => {
    await removeAllowedNetwork(db.appPrisma, { cidr: "127.0.0.1/32", actor: "test" });
    try {
      const before = received.length;
      const dead = await finish("tenant_A", "die");
      const delivery = await deliveryOf(endpointA.id, dead, "dead");
      await waitForStates(db.pool, [delivery], ["DEAD"]);
      expect((await jobRow(db.pool, delivery))?.error).toMatchObject({ code: "WEBHOOK_REFUSED_ADDRESS", class: "permanent" });
      expect(received.length).toBe(before);
      const log = await logRows(delivery);
      expect(log).toHaveLength(1);
      expect(log[0]).toMatchObject({ attempt: 1, status_code: null, error: expect.stringContaining("127.0.0.1, a loopback address") });
    } finally {
      await addAllowedNetwork(db.appPrisma, { cidr: "127.0.0.1/32", actor: "test" });
    }
  });
});
