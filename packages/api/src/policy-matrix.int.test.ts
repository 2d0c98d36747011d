import { randomUUID } from "node:crypto";
import { createApiKey, PolicyCache } from "@porter/core";
import { controlPlane } from "@porter/core/testing/control-plane-factory";
import { useTestDatabase } from "@porter/db/testing/test-database";
import { TRPCError } from "@trpc/server";
import { beforeAll, describe, expect, it } from "vitest";
import type { Context, Role, Session } from "./context";
import { appRouter, createCaller } from "./root";
import type { Policy } from "./trpc";

// The role × procedure matrix: every procedure of the appRouter is called with no session and as
// viewer, operator and admin (and with a producer key), and must be allowed or refused (401/403)
// exactly as its policy says. The policy comes from the builder the procedure starts from
// (procedure meta); EXPECTED is the reviewed table of it — a new procedure, or a changed policy,
// fails here until the table says so, and a procedure with no policy at all fails the run.
const EXPECTED: Record<string, Policy> = {
  "producer.enqueue": "producer",
  "producer.enqueueBatch": "producer",
  "producer.get": "producer",
  "producer.cancel": "producer",
  "system.health": "public",
  "system.counts": "viewer",
  "me.get": "viewer",
  "overview.queues": "viewer",
  "overview.health": "viewer",
  "overview.throughput": "viewer",
  "overview.series": "viewer",
  "overview.signals": "viewer",
  "jobs.list": "viewer",
  "jobs.counts": "viewer",
  "jobs.get": "viewer",
  "jobs.cancel": "operator",
  "jobs.retry": "operator",
  "jobs.redrive": "operator",
  "pools.list": "viewer",
  "pools.overview": "viewer",
  "pools.create": "admin",
  "pools.update": "admin",
  "pools.drain": "operator",
  "pools.resume": "operator",
  "pools.workers.running": "viewer",
  "pools.workers.get": "viewer",
  "pools.workers.attempts": "viewer",
  "queues.list": "viewer",
  "queues.get": "viewer",
  "queues.create": "admin",
  "queues.update": "admin",
  "queues.pause": "operator",
  "queues.resume": "operator",
  "queues.drain": "operator",
  "jobTypes.list": "viewer",
  "jobTypes.create": "admin",
  "jobTypes.update": "admin",
  "tenants.list": "viewer",
  "tenants.create": "admin",
  "tenants.update": "admin",
  "tenants.links.list": "viewer",
  "tenants.links.create": "operator",
  "tenants.links.revoke": "operator",
  "tenants.usage": "viewer",
  "resourceKeys.list": "viewer",
  "resourceKeys.create": "admin",
  "resourceKeys.update": "admin",
  "apiKeys.list": "viewer",
  "apiKeys.create": "admin",
  "apiKeys.revoke": "admin",
  "users.list": "admin",
  "users.create": "admin",
  "users.update": "admin",
  "audit.list": "viewer",
  "dlq.alerts.list": "viewer",
  "dlq.alerts.rules": "viewer",
  "dlq.alerts.saveRule": "admin",
  "dlq.alerts.deleteRule": "admin",
  "dlq.webhook.get": "admin",
  "dlq.webhook.set": "admin",
  "dlq.webhook.delete": "admin",
  "jobs.errorCodes": "viewer",
  "dlq.groups.list": "viewer",
  "dlq.groups.get": "viewer",
  "dlq.groups.jobs": "viewer",
  "dlq.groups.triage": "operator",
  "dlq.jobs.get": "viewer",
  "dlq.jobs.triage": "operator",
  "dlq.reasonCodes.list": "viewer",
  "dlq.reasonCodes.upsert": "admin",
  "dlq.redrives.preview": "operator",
  "dlq.redrives.create": "operator",
  "dlq.redrives.list": "viewer",
  "dlq.redrives.get": "viewer",
  "dlq.redrives.abort": "operator",
  "webhooks.list": "viewer",
  "webhooks.create": "operator",
  "webhooks.update": "operator",
  "webhooks.rotateSecret": "operator",
  "webhooks.delete": "operator",
  "webhooks.deliveries": "viewer",
  "webhooks.allowlist.list": "admin",
  "webhooks.allowlist.add": "admin",
  "webhooks.allowlist.remove": "admin",
};

// Valid inputs, so an allowed call runs the procedure for real (a crash would show as
// INTERNAL_SERVER_ERROR); a call without a sample sends no input and must fail validation (400)
// once past the policy — proving the policy is checked first.
const unique = () => randomUUID().slice(0, 8);
const SAMPLES: Record<string, () => unknown> = {
  "producer.enqueue": () => ({ job_type: "mx-q.job", tenant_id: "mx_t", payload: { ref: "x" }, idempotency_key: unique() }),
  "producer.get": () => ({ job_id: randomUUID() }),
  "overview.throughput": () => ({ minutes: 5 }),
  "overview.series": () => ({ window: "1h" }),
  "overview.signals": () => ({}),
  "jobs.list": () => ({ filter: { queue_id: "mx-q" }, limit: 5 }),
  "jobs.counts": () => ({ filter: {} }),
  "jobs.get": () => ({ job_id: randomUUID() }),
  "jobs.cancel": () => ({ selection: { filter: { queue_id: "mx-q" } }, dry_run: true }),
  "jobs.retry": () => ({ selection: { job_ids: [randomUUID()] }, dry_run: true }),
  "jobs.redrive": () => ({ selection: { filter: { queue_id: "mx-q" } }, dry_run: true }),
  "pools.overview": () => ({}),
  "pools.create": () => ({ id: `mx-pool-${unique()}` }),
  "pools.update": () => ({ id: "mx-pool", patch: { description: `d ${unique()}` } }),
  "pools.drain": () => ({ id: "mx-pool" }),
  "pools.resume": () => ({ id: "mx-pool" }),
  "pools.workers.running": () => ({ pool_id: "mx-pool" }),
  "pools.workers.get": () => ({ id: "mx-worker" }),
  "pools.workers.attempts": () => ({ id: "mx-worker" }),
  "queues.get": () => ({ id: "mx-q" }),
  "queues.create": () => ({ id: `mx-q-${unique()}`, pool_id: "mx-pool" }),
  "queues.update": () => ({ id: "mx-q", patch: { lease_seconds: 20 } }),
  "queues.pause": () => ({ id: "mx-q" }),
  "queues.resume": () => ({ id: "mx-q" }),
  "queues.drain": () => ({ id: "mx-q" }),
  "jobTypes.create": () => ({ id: `mx.type.${unique()}`, queue_id: "mx-q" }),
  "jobTypes.update": () => ({ id: "mx-q.job", patch: { payload_schema_version: "2" } }),
  "tenants.create": () => ({ id: `mx_t_${unique()}`, weight: 2 }),
  "tenants.update": () => ({ id: "mx_t", patch: { weight: 3 } }),
  "tenants.links.list": () => ({ tenant_id: "mx_t" }),
  "tenants.links.create": () => ({ tenant_id: "mx_t", expires_in_s: 3600 }),
  "tenants.links.revoke": () => ({ id: "sl_000000000000000000" }),
  "tenants.usage": () => ({ tenant_id: "mx_t" }),
  "resourceKeys.create": () => ({ id: `mx-rk-${unique()}`, concurrency_limit: 2 }),
  "resourceKeys.update": () => ({ id: "mx-rk", patch: { burst: 5 } }),
  "apiKeys.create": () => ({ tenant_ids: ["mx_t"], job_types: ["*"] }),
  "apiKeys.revoke": () => ({ id: "nonexistent" }),
  "users.create": () => ({ email: `u-${unique()}@example.com`, role: "viewer", password: "correct horse battery" }),
  "users.update": () => ({ id: "no-such-user", name: "x" }),
  "audit.list": () => ({ filter: {}, limit: 5 }),
  "dlq.alerts.list": () => ({ state: "firing", limit: 5 }),
  "dlq.alerts.rules": () => ({}),
  "dlq.alerts.saveRule": () => ({ queue_id: "mx-q", kind: "deaths_5m", threshold: 10 }),
  "dlq.alerts.deleteRule": () => ({ id: "999999" }),
  "dlq.webhook.get": () => ({}),
  "dlq.webhook.set": () => ({ url: "https://hooks.example.com/porter", tenant_id: "mx_t" }),
  "dlq.webhook.delete": () => ({}),
  "dlq.groups.list": () => ({ owner: "none", limit: 5 }),
  "dlq.groups.get": () => ({ id: "999999" }),
  "dlq.groups.jobs": () => ({ id: "999999" }),
  "dlq.groups.triage": () => ({ id: "999999", note: "policy matrix" }),
  "dlq.jobs.get": () => ({ job_id: randomUUID() }),
  "dlq.jobs.triage": () => ({ job_id: randomUUID(), note: "policy matrix" }),
  "dlq.reasonCodes.upsert": () => ({ code: `mx_${unique()}`, label: "Matrix" }),
  "dlq.redrives.preview": () => ({ selection: { filter: { queue_id: "mx-q" } } }),
  // No dead jobs in mx-q: an allowed create is refused as a bad request (nothing to redrive).
  "dlq.redrives.create": () => ({ selection: { filter: { queue_id: "mx-q" } }, rate_per_s: 5 }),
  "dlq.redrives.list": () => ({ limit: 5 }),
  "dlq.redrives.get": () => ({ id: randomUUID() }),
  "dlq.redrives.abort": () => ({ id: randomUUID() }),
  "webhooks.list": () => ({ tenant_id: "mx_t" }),
  // A public IP literal: the SSRF guard passes it without DNS (nothing is delivered here).
  "webhooks.create": () => ({ tenant_id: "mx_t", url: "https://203.0.113.7/hook", events: ["dead"] }),
  "webhooks.update": () => ({ id: "we_000000000000000000", enabled: false }),
  "webhooks.rotateSecret": () => ({ id: "we_000000000000000000" }),
  "webhooks.delete": () => ({ id: "we_000000000000000000" }),
  "webhooks.deliveries": () => ({ id: "we_000000000000000000" }),
  "webhooks.allowlist.add": () => ({ cidr: "198.51.100.0/24", note: "policy matrix" }),
  "webhooks.allowlist.remove": () => ({ cidr: "192.0.2.0/24" }),
};

const db = useTestDatabase();
let producerKey: string;

beforeAll(async () => {
  await controlPlane(db.pool, { pool: "mx-pool", queues: [{ id: "mx-q" }], tenants: [{ id: "mx_t" }] });
  await db.pool.query(`INSERT INTO resource_keys (id) VALUES ('mx-rk')`);
  await db.pool.query(`INSERT INTO workers (id, pool_id, host, pid, version, concurrency) VALUES ('mx-worker', 'mx-pool', 'h', 1, 't', 1)`);
  producerKey = (await createApiKey(db.prisma, { tenantIds: ["mx_t"], jobTypes: ["*"], actor: "test" })).key;
});

type Caller = "anonymous" | "producer" | Role;
const CALLERS: Caller[] = ["anonymous", "producer", "viewer", "operator", "admin"];
const RANK: Caller[] = ["viewer", "operator", "admin"];

/** A same-origin JSON request, as the console's own pages send: policies are what is under test. */
const contextFor = (caller: Caller): Context => {
  const headers = new Headers({ "content-type": "application/json", origin: "http://console.test", host: "console.test" });
  if (caller === "producer") headers.set("authorization", `Bearer ${producerKey}`);
  const session: Session | null =
    caller === "anonymous" || caller === "producer" ? null : { userId: `u-${caller}`, email: `${caller}@example.com`, role: caller };
  return {
    req: new Request("http://console.test/api/trpc/x", { method: "POST", headers }),
    resHeaders: new Headers(),
    db: db.appPool,
    prisma: db.appPrisma,
    policyCache: new PolicyCache(),
    maxPayloadBytes: 64 * 1024,
    apiKey: null,
    session,
  };
};

/** What a caller should get from a procedure of this policy: allowed, or the exact refusal. */
const expectedFor = (policy: Policy, caller: Caller): "allowed" | "UNAUTHORIZED" | "FORBIDDEN" => {
  if (policy === "public") return "allowed";
  if (policy === "producer") return caller === "producer" ? "allowed" : "UNAUTHORIZED";
  if (caller === "anonymous" || caller === "producer") return "UNAUTHORIZED";
  return RANK.indexOf(caller) >= RANK.indexOf(policy) ? "allowed" : "FORBIDDEN";
};

const call = async (path: string, caller: Caller): Promise<string> => {
  let target: unknown = createCaller(contextFor(caller));
  for (const part of path.split(".")) target = (target as Record<string, unknown>)[part];
  const sample = SAMPLES[path];
  try {
    await (target as (input: unknown) => Promise<unknown>)(sample ? sample() : undefined);
    return "OK";
  } catch (error) {
    return error instanceof TRPCError ? error.code : `THREW ${String(error)}`;
  }
};

const procedures = Object.entries(
  (appRouter._def as unknown as { procedures: Record<string, { _def: { meta?: { policy?: Policy }; type: string } }> }).procedures,
);

describe("the role × procedure matrix", () => {
  it("every procedure declares a policy, and the policies are the reviewed ones", () => {
    const undeclared = procedures.filter(([, p]) => !p._def.meta?.policy).map(([path]) => path);
    expect(undeclared, "procedures without a policy (start them from a policy builder)").toEqual([]);
    const declared = Object.fromEntries(procedures.map(([path, p]) => [path, p._def.meta!.policy]));
    expect(declared).toEqual(EXPECTED);
  });

  it("every sample names a real procedure", () => {
    expect(Object.keys(SAMPLES).filter((path) => !(path in EXPECTED))).toEqual([]);
  });

  // Behaviour against the reviewed table, not the meta: a builder that enforces something else
  // than it declares fails here.
  for (const [path, policy] of Object.entries(EXPECTED)) {
    it(`${path} (${policy}): ${CALLERS.join(", ")}`, async () => {
      expect(
        procedures.some(([p]) => p === path),
        `${path} is not served`,
      ).toBe(true);
      for (const caller of CALLERS) {
        const expected = expectedFor(policy, caller);
        const got = await call(path, caller);
        if (expected === "allowed") {
          expect(["UNAUTHORIZED", "FORBIDDEN", "INTERNAL_SERVER_ERROR"], `${path} as ${caller}: ${got}`).not.toContain(got);
          expect(got, `${path} as ${caller}`).not.toMatch(/^THREW/);
          // Without a sample the input is missing: a 400 shows the policy let the call through.
          if (!SAMPLES[path] && procedures.find(([p]) => p === path)?.[1]._def.type !== "query") expect(got).toBe("BAD_REQUEST");
        } else {
          expect(got, `${path} as ${caller}`).toBe(expected);
        }
      }
    });
  }
});
