// Issue 12, deliverable 4: an alert's webhook.deliver job, run by the real handler in a real
// worker, against a local HTTPS server with a self-signed certificate (generated here with
// openssl, trusted through the worker's `webhook.ca` option: verification stays on). The received
// signature verifies with `standardwebhooks`; a tampered body does not; 500 → retried, 410 → dead.
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import https from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TJobError } from "@porter/contracts";
import { addAllowedNetwork, claimJobs, enqueueJobs, evaluateAlerts, failJobs, saveAlertRule, setAlertWebhook } from "@porter/core";
import { controlPlane } from "@porter/core/testing/control-plane-factory";
import { writeSelfSignedCert } from "@porter/core/testing/self-signed-cert";
import { useTestDatabase } from "@porter/db/testing/test-database";
import type { HandlerContext, Job } from "@porter/sdk";
import { Webhook, WebhookVerificationError } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../logger";
import { type StartedWorker, startWorker } from "../runtime/start-worker";
import { attemptsOf, jobRow, waitFor, waitForStates } from "../testing/fixtures";
import { createWebhookDeliver, retryAfterMs } from "./webhook-deliver";

const db = useTestDatabase();
const logger = createLogger({ level: "silent" });

type Received = { headers: Record<string, string>; body: string };
const received: Received[] = [];
/** What the server answers next (one entry per request; then 200). */
let answers: Array<{ status: number; headers?: Record<string, string> } | "hang"> = [];

let dir: string;
let cert: string;
let server: https.Server;
let url: string;
let secret: string;
let worker: StartedWorker;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "porter-webhook-"));
  const tls = writeSelfSignedCert(dir);
  cert = tls.cert;
  server = https.createServer({ key: tls.key, cert }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      received.push({ headers: Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)])), body: Buffer.concat(chunks).toString("utf8") });
      const answer = answers.shift() ?? { status: 200 };
      if (answer !== "hang") res.writeHead(answer.status, answer.headers).end("ok");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `https://localhost:${(server.address() as AddressInfo).port}/hooks/porter?token=subscriber-secret`;

  await controlPlane(db.pool, {
    pool: "hooks",
    queues: [{ id: "notify", max_attempts: 3, default_max_attempts: 3, backoff_base_ms: 50, backoff_cap_ms: 100 }],
    jobTypes: [{ id: "webhook.deliver", queue: "notify" }],
    tenants: ["tenant_N"],
  });
  await controlPlane(db.pool, { pool: "apps", queues: [{ id: "orders", max_attempts: 1, default_max_attempts: 1 }], tenants: ["tenant_A"] });
  // The receiver is on loopback: the SSRF guard refuses it unless its network is allow-listed.
  await addAllowedNetwork(db.appPrisma, { cidr: "127.0.0.1/32", note: "the test's receiver", actor: "test" });
  secret = (await setAlertWebhook(db.appPrisma, { url, tenantId: "tenant_N", enabled: true, rotateSecret: false, actor: "test" })).secret;
  worker = await startWorker({ connectionString: db.appConnectionString, pool: "hooks", logger, maintenance: false, concurrency: 2, webhook: { ca: cert } });
});

afterAll(async () => {
  await worker?.drain();
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

/** One orders job that dies at `at` (a real death: enqueue → claim → failJobs). */
const kill = async (at: Date) => {
  const [r] = await enqueueJobs(db.pool, [{ job_type: "orders.job", tenant_id: "tenant_A", payload: { x: 1 }, idempotency_key: randomUUID() }]);
  const [c] = await claimJobs(db.pool, { poolId: "apps", workerId: "w", limit: 1 });
  expect(c?.jobId).toBe(r!.job_id);
  const error: TJobError = {
    code: "UPSTREAM",
    class: "permanent",
    message: "order refused",
    worker_version: "t",
    attempt: 1,
    trace_id: "t",
    last_checkpoint: null,
  };
  await failJobs(db.pool, [{ id: c!.id, leaseToken: c!.leaseToken, attempt: 1, outcome: "failed", error, next: { state: "DEAD" } }], at);
};

const deliveryJob = async (key: string) => {
  const { rows } = await db.pool.query<{ job_id: string }>(
    `SELECT job_id::text FROM jobs WHERE idempotency_key = $1 UNION ALL SELECT job_id::text FROM finished_jobs WHERE idempotency_key = $1`,
    [key],
  );
  return rows.map((r) => r.job_id);
};

/** A delivery job of a made-up event, enqueued directly (the server's answers are what is under test). */
const enqueueDelivery = async (eventId: string) => {
  const payload = {
    endpoint_ref: "webhook_endpoint:alerts",
    event: { id: eventId, type: "alert.firing", timestamp: new Date().toISOString(), data: { n: 1 } },
  };
  const [r] = await enqueueJobs(db.pool, [{ job_type: "webhook.deliver", tenant_id: "tenant_N", payload, idempotency_key: eventId }]);
  return r!.job_id;
};

describe("webhook.deliver, the real handler", () => {
  it("delivers a firing and a resolved alert, each signed: the signature verifies with standardwebhooks, a tampered body fails", async () => {
    const t0 = new Date(Date.now() - 60_000);
    const rule = await saveAlertRule(db.appPrisma, { input: { queue_id: "orders", kind: "deaths_5m", threshold: 0, enabled: true }, actor: "test" });
    await kill(t0);
    const fired = await evaluateAlerts(db.appPool, { now: new Date(t0.getTime() + 1000) });
    // A second pass (the next 15 s tick) neither re-fires nor re-sends.
    expect((await evaluateAlerts(db.appPool, { now: new Date(t0.getTime() + 2000) })).fired).toEqual([]);
    expect(fired.fired).toHaveLength(1);
    const alertId = fired.fired[0]!;
    const jobs = await deliveryJob(`alert:${alertId}:firing`);
    expect(jobs).toHaveLength(1);
    await waitForStates(db.pool, jobs, ["SUCCEEDED"]);
    expect((await jobRow(db.pool, jobs[0]!))?.result).toEqual({ status: 200 });

    expect(received).toHaveLength(1);
    const firing = received[0]!;
    expect(firing.headers["webhook-id"]).toBe(`alert_${alertId}_firing`);
    expect(firing.headers["content-type"]).toBe("application/json");
    const verified = new Webhook(secret).verify(firing.body, firing.headers) as { type: string; data: Record<string, unknown> };
    expect(verified).toMatchObject({ type: "alert.firing", data: { alert_id: alertId, rule_id: rule.id, kind: "deaths_5m", queue_id: "orders", value: 1 } });
    const tampered = firing.body.replace('"value":1', '"value":0');
    expect(tampered).not.toBe(firing.body);
    expect(() => new Webhook(secret).verify(tampered, firing.headers)).toThrow(WebhookVerificationError);
    // Another key does not verify it either.
    expect(() => new Webhook(`whsec_${Buffer.alloc(24, 7).toString("base64")}`).verify(firing.body, firing.headers)).toThrow(WebhookVerificationError);

    const resolved = await evaluateAlerts(db.appPool, { now: new Date(t0.getTime() + 6 * 60_000) });
    expect(resolved.resolved).toEqual([alertId]);
    const resolvedJobs = await deliveryJob(`alert:${alertId}:resolved`);
    await waitForStates(db.pool, resolvedJobs, ["SUCCEEDED"]);
    const last = received.at(-1)!;
    expect(new Webhook(secret).verify(last.body, last.headers)).toMatchObject({ type: "alert.resolved", data: { alert_id: alertId, state: "resolved" } });
    // Neither the payloads nor the recorded results carry the secret.
    const { rows } = await db.pool.query(`SELECT payload::text || coalesce(result::text, '') AS t FROM finished_jobs WHERE job_type = 'webhook.deliver'`);
    expect(rows.length).toBeGreaterThanOrEqual(2);
    for (const row of rows) expect(row.t).not.toContain(secret.slice(6, 20));
  });

  it("a 500 is retried (then delivered); a 410 is permanent: the job dies into the DLQ", async () => {
    answers = [{ status: 500 }];
    const retried = await enqueueDelivery(`evt_${randomUUID()}`);
    await waitForStates(db.pool, [retried], ["SUCCEEDED"]);
    const attempts = await attemptsOf(db.pool, retried);
    expect(attempts.map((a) => [a.attempt, a.outcome, a.error?.code ?? null])).toEqual([
      [1, "failed", "WEBHOOK_UNAVAILABLE"],
      [2, "succeeded", null],
    ]);
    expect(attempts[0]!.error?.message).not.toContain("subscriber-secret");

    answers = [{ status: 410 }];
    const gone = await enqueueDelivery(`evt_${randomUUID()}`);
    await waitForStates(db.pool, [gone], ["DEAD"]);
    expect((await jobRow(db.pool, gone))?.error).toMatchObject({ code: "WEBHOOK_REJECTED", class: "permanent" });
    const { rows } = await db.pool.query(`SELECT g.job_type, g.error_code FROM dlq_deaths d JOIN dlq_groups g ON g.id = d.group_id WHERE d.job_id = $1`, [
      gone,
    ]);
    expect(rows).toEqual([{ job_type: "webhook.deliver", error_code: "WEBHOOK_REJECTED" }]);
  });

  it("a 429 is a throttle with its Retry-After; TLS is verified: without the CA the self-signed server is refused (retryable)", async () => {
    const handler = createWebhookDeliver({ db: db.appPool });
    const throttled = createWebhookDeliver({ db: db.appPool, ca: cert });
    const payload = {
      endpoint_ref: "webhook_endpoint:alerts",
      event: { id: "evt_direct", type: "alert.firing", timestamp: new Date().toISOString(), data: {} },
    };
    const ctx = {
      signal: new AbortController().signal,
      logger,
      attempt: 1,
      workerId: "w",
      checkpoint: () => undefined,
      heartbeat: async () => undefined,
    } as unknown as HandlerContext;
    const job = (p: unknown) => ({ job_id: randomUUID(), payload: p, attempt: 1 }) as unknown as Job<unknown>;
    const before = received.length;
    await expect(handler.run(job(handler.parsePayload(payload)), ctx)).rejects.toMatchObject({ name: "RetryableError", code: "WEBHOOK_UNAVAILABLE" });
    expect(received.length).toBe(before);

    answers = [{ status: 429, headers: { "retry-after": "7" } }];
    await expect(throttled.run(job(throttled.parsePayload(payload)), ctx)).rejects.toMatchObject({
      name: "RetryableError",
      isThrottle: true,
      retryAfterMs: 7000,
    });
    answers = [{ status: 302, headers: { location: "https://elsewhere.example.com/" } }];
    await expect(throttled.run(job(throttled.parsePayload(payload)), ctx)).rejects.toMatchObject({ name: "PermanentError", code: "WEBHOOK_REJECTED" });
    expect(retryAfterMs("Wed, 21 Oct 2015 07:28:00 GMT", Date.parse("Wed, 21 Oct 2015 07:27:00 GMT"))).toBe(60_000);

    // An endpoint that never answers: the timeout ends the attempt, retryable.
    answers = ["hang"];
    const impatient = createWebhookDeliver({ db: db.appPool, ca: cert, timeoutMs: 300 });
    await expect(impatient.run(job(impatient.parsePayload(payload)), ctx)).rejects.toMatchObject({
      name: "RetryableError",
      code: "WEBHOOK_UNAVAILABLE",
      message: expect.stringContaining("timed out"),
    });
    // A disabled endpoint is skipped; a deleted one is permanent.
    await db.pool.query(
      `INSERT INTO webhook_endpoints (id, scope, url, secret, tenant_id, enabled) VALUES ('off', 'alerts', $1, 'whsec_AAAA', 'tenant_N', false)`,
      [url],
    );
    const count = received.length;
    await expect(throttled.run(job(throttled.parsePayload({ ...payload, endpoint_ref: "webhook_endpoint:off" })), ctx)).resolves.toEqual({
      skipped: "endpoint disabled",
      status: null,
    });
    await expect(throttled.run(job(throttled.parsePayload({ ...payload, endpoint_ref: "webhook_endpoint:gone" })), ctx)).rejects.toMatchObject({
      name: "PermanentError",
      code: "WEBHOOK_ENDPOINT_GONE",
    });
    expect(received.length).toBe(count);

    // A payload without a webhook_endpoint ref is the demo's: simulated, never an HTTP request.
    expect(handler.parsePayload({ endpoint_ref: "ep://demo", event_ref: "evt://1" })).toMatchObject({ kind: "simulated" });
    expect(() => handler.parsePayload({ endpoint_ref: "webhook_endpoint:alerts" })).toThrow(/invalid payload/);
    await waitFor("no request in flight", () => worker.running === 0);
  });
});
