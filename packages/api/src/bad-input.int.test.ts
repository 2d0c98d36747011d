import { JOB_STATES } from "@porter/contracts";
import { enqueueJobs, PolicyCache } from "@porter/core";
import { useTestDatabase } from "@porter/db/testing/test-database";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { callProcedure, enqueueRequest, fingerprint, jobId, nastyJson, nastyNumber, nastyString, oddDate, toJsonText } from "./testing/bad-input";
import { moveJobs } from "./testing/console";
import { type ProducerFixtures, seedProducerFixtures } from "./testing/fixtures";
import { startTestServer, type TestServer } from "./testing/http-server";

// The bad-input property: whatever a caller sends to a producer procedure or a console input —
// arbitrary JSON, strings with NUL or lone surrogates, huge numbers, odd dates, deep nesting — the
// answer is a 4xx with a message or a success, never a 5xx; and a 4xx changed no row (jobs,
// finished_jobs, idempotency_keys, job_events, audit_log are fingerprinted before and after).
// Over real HTTP, as producers and the console's pages call it. A failure prints fast-check's
// seed and path; replay it with PORTER_FC_SEED=<seed> (and the path fast-check prints).
const db = useTestDatabase();
let server: TestServer;
let fx: ProducerFixtures;
let jobIds: string[];
let deadJobId: string;

const SEED = process.env.PORTER_FC_SEED ? Number(process.env.PORTER_FC_SEED) : undefined;
const PATH = process.env.PORTER_FC_PATH;
/** Bounded: the whole file stays well under 30 s on a loaded 2-core machine. */
const runs = (numRuns: number): fc.Parameters<unknown> => ({ numRuns, ...(SEED === undefined ? {} : { seed: SEED }), ...(PATH ? { path: PATH } : {}) });

beforeAll(async () => {
  fx = await seedProducerFixtures(db);
  const made = await enqueueJobs(
    db.pool,
    [fx.tenantA, fx.tenantA, fx.tenantB].map((tenant, i) => ({
      job_type: i ? "fx.parse" : "fx.email",
      tenant_id: tenant,
      payload: { i },
      idempotency_key: `seed-${i}`,
    })),
  );
  jobIds = made.map((r) => r.job_id);
  // A failure group (id 1) with a dead job, and a console user to own it: triage inputs reach past the 404.
  const [dead] = await enqueueJobs(db.pool, [{ job_type: "fx.email", tenant_id: fx.tenantA, payload: { dead: true }, idempotency_key: "seed-dead" }]);
  await moveJobs(db.pool, [dead!.job_id], "DEAD");
  deadJobId = dead!.job_id;
  await db.pool.query(`INSERT INTO users (id, email, name, password_hash, role) VALUES ('u_triager', 'triager@example.com', 'T', 'x', 'operator')`);
  // Every request is an admin's same-origin console request as well: console inputs are reached.
  server = await startTestServer({
    db: db.pool,
    policyCache: new PolicyCache({ ttlMs: 1000 }),
    getSession: async () => ({ userId: "u-admin", email: "admin@example.com", role: "admin" }),
  });
});
afterAll(async () => {
  await server?.close();
});

/** The property for one call: never 5xx; a 4xx has a message and left every table as it was. */
const holds = async (path: string, type: "query" | "mutation", input: unknown, key?: string): Promise<void> => {
  const before = await fingerprint(db.pool);
  const reply = await callProcedure(server.url, path, type, input, key);
  const shown = `${path} ${toJsonText(input).slice(0, 300)} → ${reply.status} ${reply.text.slice(0, 300)}`;
  expect(reply.status, shown).toBeLessThan(500);
  if (reply.status >= 400) {
    const message = (JSON.parse(reply.text) as { error?: { message?: unknown } }).error?.message;
    expect(typeof message === "string" && message.length > 0, shown).toBe(true);
    expect(await fingerprint(db.pool), shown).toEqual(before);
  }
};

const orNasty = <T>(valid: fc.Arbitrary<T>, nasty: fc.Arbitrary<unknown> = nastyJson) => fc.oneof({ weight: 3, arbitrary: valid }, nasty);
const optional = <T extends Record<string, fc.Arbitrary<unknown>>>(model: T) => fc.record(model, { requiredKeys: [] });
const keys = () => fc.constantFrom(fx.keyA, fx.keyAB, fx.keyEmailOnly, fx.keyB);
const text = () => orNasty(fc.constantFrom("fx-queue", "fx.email", fx.tenantA, "x"), nastyString());
const limit = orNasty(fc.integer({ min: 1, max: 200 }), nastyNumber);

const jobFilter = () =>
  optional({
    states: orNasty(fc.subarray([...JOB_STATES])),
    queue_id: text(),
    job_type: text(),
    tenant_id: text(),
    from: orNasty(oddDate),
    to: orNasty(oddDate),
    idempotency_key: text(),
    job_id: jobId(jobIds),
    trace_id: text(),
    error_code: text(),
  });
const redriveSelection = () =>
  fc.oneof(
    fc.record({
      filter: optional({ queue_id: text(), job_type: text(), tenant_id: text(), error_code: text(), from: orNasty(oddDate), to: orNasty(oddDate) }),
    }),
    fc.record({ group_id: orNasty(fc.constantFrom("1", "42", "0", "-1", "99999999999999999999"), nastyString()) }),
    fc.record({ job_ids: orNasty(fc.array(jobId(jobIds), { maxLength: 3 })) }),
  );
const auditFilter = () => optional({ actor: text(), action: text(), object_type: text(), object_id: text(), from: orNasty(oddDate), to: orNasty(oddDate) });
const cursor = orNasty(
  fc.constantFrom("1", "99999999999999999999", "9223372036854775807", "9223372036854775808", "0", "-1", "AZmVr3X3cAGXXXXXXXXXXX"),
  nastyString(),
);

const groupId = () => orNasty(fc.constantFrom("1", "999999", "0", "99999999999999999999"), nastyString());
const dlqStatus = () => orNasty(fc.constantFrom("new", "investigating", "fix_pending", "resolved", "ignored"));
const owner = () => orNasty(fc.constantFrom("me", "none", "triager@example.com", "u_triager", "ghost@example.com", null), nastyString());

/** One row per procedure: its path, kind, and the inputs to throw at it. A new procedure is one more row. */
const PROCEDURES: Array<{ path: string; type: "query" | "mutation"; numRuns: number; input: () => fc.Arbitrary<unknown>; key?: boolean }> = [
  {
    path: "producer.enqueue",
    type: "mutation",
    numRuns: 120,
    key: true,
    input: () => orNasty(enqueueRequest(["fx.email", "fx.parse"], [fx.tenantA, fx.tenantB])),
  },
  {
    path: "producer.enqueueBatch",
    type: "mutation",
    numRuns: 50,
    key: true,
    input: () => orNasty(fc.record({ jobs: orNasty(fc.array(enqueueRequest(["fx.email", "fx.parse"], [fx.tenantA]), { minLength: 1, maxLength: 4 })) })),
  },
  { path: "producer.get", type: "query", numRuns: 30, key: true, input: () => orNasty(fc.record({ job_id: jobId(jobIds) })) },
  {
    path: "producer.cancel",
    type: "mutation",
    numRuns: 50,
    key: true,
    input: () => orNasty(optional({ job_id: jobId(jobIds), reason: orNasty(fc.constant("done"), nastyString()) })),
  },
  { path: "jobs.list", type: "query", numRuns: 50, input: () => orNasty(optional({ filter: jobFilter(), cursor, limit })) },
  { path: "jobs.counts", type: "query", numRuns: 25, input: () => orNasty(optional({ filter: jobFilter() })) },
  { path: "jobs.get", type: "query", numRuns: 20, input: () => orNasty(fc.record({ job_id: jobId(jobIds) })) },
  {
    path: "jobs.cancel",
    type: "mutation",
    numRuns: 25,
    // Dry runs: the filter is what is under test, not cancelling the fixtures.
    input: () =>
      fc.record({
        selection: fc.oneof(fc.record({ filter: jobFilter() }), fc.record({ job_ids: orNasty(fc.array(jobId(jobIds))) })),
        dry_run: fc.constant(true),
        reason: nastyString(),
      }),
  },
  {
    path: "jobs.redrive",
    type: "mutation",
    numRuns: 15,
    input: () => fc.record({ selection: fc.record({ filter: jobFilter() }), dry_run: fc.constant(true), force: orNasty(fc.boolean()), reason: nastyString() }),
  },
  { path: "audit.list", type: "query", numRuns: 50, input: () => orNasty(optional({ filter: auditFilter(), cursor, limit })) },
  {
    path: "overview.throughput",
    type: "query",
    numRuns: 20,
    input: () => orNasty(optional({ minutes: orNasty(fc.integer({ min: 1, max: 180 }), nastyNumber), queue_id: text() })),
  },
  {
    path: "overview.series",
    type: "query",
    numRuns: 30,
    input: () =>
      orNasty(
        optional({
          window: orNasty(fc.constantFrom("15m", "1h", "6h", "24h", "7d", "2h", "7D", "", "constructor", "__proto__"), nastyString()),
          queue_id: text(),
          tenant_id: text(),
          job_type: text(),
        }),
      ),
  },
  {
    path: "overview.signals",
    type: "query",
    numRuns: 20,
    input: () => orNasty(optional({ queue_id: text(), window_s: orNasty(fc.integer({ min: 60, max: 86_400 }), nastyNumber) })),
  },
  { path: "pools.overview", type: "query", numRuns: 10, input: () => orNasty(optional({ include_stopped: orNasty(fc.boolean()) })) },
  { path: "queues.get", type: "query", numRuns: 15, input: () => orNasty(fc.record({ id: text() })) },
  { path: "queues.pause", type: "mutation", numRuns: 20, input: () => fc.record({ id: fc.constant("fx-queue"), reason: nastyString() }) },
  {
    path: "tenants.update",
    type: "mutation",
    numRuns: 25,
    input: () =>
      fc.record({
        id: fc.constant(fx.tenantA),
        patch: optional({
          name: nastyString(),
          status_origins: fc.array(
            nastyString().map((s) => `https://${s}`),
            { maxLength: 2 },
          ),
          status_accent: fc.oneof(nastyString(), fc.constant(null), fc.constant("#12ab9f")),
        }),
        reason: nastyString(),
      }),
  },
  {
    path: "jobTypes.update",
    type: "mutation",
    numRuns: 15,
    input: () => fc.record({ id: fc.constant("fx.other"), patch: optional({ description: nastyString(), payload_schema_version: nastyString() }) }),
  },
  {
    path: "apiKeys.create",
    type: "mutation",
    numRuns: 15,
    input: () => fc.record({ name: nastyString(), tenant_ids: fc.constant([fx.tenantA]), job_types: fc.constant(["*"]) }),
  },
  { path: "apiKeys.revoke", type: "mutation", numRuns: 15, input: () => fc.record({ id: nastyString(), reason: nastyString() }) },
  // Tenant status links (issue 13): unknown tenants and job types, out-of-range expiries, odd ids.
  { path: "tenants.links.list", type: "query", numRuns: 15, input: () => orNasty(optional({ tenant_id: text() })) },
  {
    path: "tenants.links.create",
    type: "mutation",
    numRuns: 20,
    input: () =>
      optional({
        tenant_id: text(),
        expires_in_s: orNasty(fc.integer({ min: -10, max: 100 * 86400 }), nastyNumber),
        job_types: orNasty(fc.array(text(), { maxLength: 3 })),
      }),
  },
  { path: "tenants.links.revoke", type: "mutation", numRuns: 15, input: () => orNasty(optional({ id: nastyString(), reason: nastyString() })) },
  // Tenant usage and the worker pages (issue 14): unknown tenants and workers, odd windows and cursors.
  {
    path: "tenants.usage",
    type: "query",
    numRuns: 20,
    input: () => orNasty(optional({ tenant_id: text(), window_s: orNasty(fc.integer({ min: -10, max: 100_000 }), nastyNumber) })),
  },
  { path: "pools.workers.running", type: "query", numRuns: 10, input: () => orNasty(optional({ pool_id: text() })) },
  { path: "pools.workers.get", type: "query", numRuns: 15, input: () => orNasty(optional({ id: orNasty(fc.constantFrom("w-1", "x"), nastyString()) })) },
  {
    path: "pools.workers.attempts",
    type: "query",
    numRuns: 20,
    input: () => orNasty(optional({ id: orNasty(fc.constantFrom("w-1", "x"), nastyString()), cursor, limit })),
  },
  { path: "users.update", type: "mutation", numRuns: 15, input: () => optional({ id: nastyString(), name: nastyString(), reason: nastyString() }) },
  {
    path: "dlq.alerts.list",
    type: "query",
    numRuns: 20,
    input: () => orNasty(optional({ state: orNasty(fc.constantFrom("firing", "resolved")), cursor, limit })),
  },
  {
    path: "dlq.alerts.saveRule",
    type: "mutation",
    numRuns: 30,
    input: () =>
      optional({
        id: orNasty(fc.constantFrom("1", "999999", "99999999999999999999")),
        queue_id: orNasty(fc.constantFrom("fx-queue", null), nastyString()),
        kind: orNasty(fc.constantFrom("deaths_5m", "unowned_age", "group_reopened")),
        threshold: orNasty(fc.double({ min: 0, max: 1e9, noNaN: true }), nastyNumber),
        enabled: orNasty(fc.boolean()),
      }),
  },
  {
    path: "dlq.alerts.deleteRule",
    type: "mutation",
    numRuns: 15,
    input: () => orNasty(fc.record({ id: orNasty(fc.constantFrom("1", "999999"), nastyString()) })),
  },
  {
    path: "dlq.webhook.set",
    type: "mutation",
    numRuns: 25,
    input: () =>
      optional({
        url: orNasty(fc.constantFrom("https://hooks.example.com/porter", "http://hooks.example.com/porter", "https://"), nastyString()),
        tenant_id: text(),
        enabled: orNasty(fc.boolean()),
        rotate_secret: orNasty(fc.boolean()),
      }),
  },
  // Tenant webhooks (issue 13): odd URLs (http, internal addresses), unknown events, odd ids, cursors, networks.
  { path: "webhooks.list", type: "query", numRuns: 15, input: () => orNasty(optional({ tenant_id: text() })) },
  {
    path: "webhooks.create",
    type: "mutation",
    numRuns: 30,
    input: () =>
      optional({
        tenant_id: orNasty(fc.constant(fx.tenantA), text()),
        url: orNasty(
          fc.constantFrom("https://203.0.113.9/h", "http://203.0.113.9/h", "https://127.0.0.1/h", "https://[::ffff:10.0.0.1]/h", "https://169.254.169.254/"),
          nastyString(),
        ),
        events: orNasty(fc.array(fc.constantFrom("succeeded", "dead", "cancelled", "expired", "retry_wait"), { maxLength: 5 })),
        description: nastyString(),
      }),
  },
  {
    path: "webhooks.update",
    type: "mutation",
    numRuns: 20,
    input: () =>
      optional({
        id: orNasty(fc.constantFrom("we_000000000000000000", "alerts"), nastyString()),
        url: nastyString(),
        events: orNasty(fc.array(nastyString(), { maxLength: 2 })),
        enabled: orNasty(fc.boolean()),
      }),
  },
  {
    path: "webhooks.rotateSecret",
    type: "mutation",
    numRuns: 15,
    input: () =>
      optional({
        id: orNasty(fc.constant("we_000000000000000000"), nastyString()),
        overlap_seconds: orNasty(fc.integer({ min: -5, max: 8 * 86400 }), nastyNumber),
      }),
  },
  { path: "webhooks.delete", type: "mutation", numRuns: 10, input: () => orNasty(optional({ id: nastyString() })) },
  {
    path: "webhooks.deliveries",
    type: "query",
    numRuns: 15,
    input: () => optional({ id: orNasty(fc.constant("we_000000000000000000"), nastyString()), cursor, limit }),
  },
  {
    path: "webhooks.allowlist.add",
    type: "mutation",
    numRuns: 20,
    input: () =>
      optional({ cidr: orNasty(fc.constantFrom("10.0.0.0/8", "10.0.0.1/8", "::1/129", "300.1.1.1/32", "1.2.3.4"), nastyString()), note: nastyString() }),
  },
  { path: "webhooks.allowlist.remove", type: "mutation", numRuns: 10, input: () => orNasty(optional({ cidr: nastyString() })) },
  { path: "jobs.errorCodes", type: "query", numRuns: 10, input: () => orNasty(fc.constant({})) },
  {
    path: "dlq.groups.list",
    type: "query",
    numRuns: 30,
    input: () =>
      orNasty(
        optional({
          queue_id: text(),
          job_type: text(),
          tenant_id: text(),
          error_code: text(),
          status: dlqStatus(),
          owner: owner(),
          dead_only: orNasty(fc.boolean()),
          sort: orNasty(fc.constantFrom("last_seen", "first_seen", "count", "dead_now", "status")),
          order: orNasty(fc.constantFrom("asc", "desc")),
          cursor,
          limit,
        }),
      ),
  },
  { path: "dlq.groups.get", type: "query", numRuns: 15, input: () => orNasty(fc.record({ id: groupId() })) },
  { path: "dlq.groups.jobs", type: "query", numRuns: 20, input: () => orNasty(optional({ id: groupId(), dead_only: orNasty(fc.boolean()), cursor, limit })) },
  {
    path: "dlq.groups.triage",
    type: "mutation",
    numRuns: 40,
    input: () =>
      optional({
        id: groupId(),
        owner: owner(),
        status: dlqStatus(),
        ignore: orNasty(fc.oneof(fc.record({ until: orNasty(oddDate) }), fc.record({ more: orNasty(fc.integer({ min: -1, max: 5 }), nastyNumber) }))),
        reason_code: orNasty(fc.constantFrom("bug", "no_such_code", null)),
        note: nastyString(),
      }),
  },
  { path: "dlq.jobs.get", type: "query", numRuns: 15, input: () => orNasty(fc.record({ job_id: orNasty(fc.constant(deadJobId), jobId(jobIds)) })) },
  {
    path: "dlq.jobs.triage",
    type: "mutation",
    numRuns: 25,
    input: () =>
      optional({
        job_id: orNasty(fc.constant(deadJobId), jobId(jobIds)),
        owner: owner(),
        status: dlqStatus(),
        reason_code: orNasty(fc.constantFrom("bug", "no_such_code", null)),
        note: nastyString(),
      }),
  },
  {
    path: "dlq.reasonCodes.upsert",
    type: "mutation",
    numRuns: 20,
    input: () =>
      optional({
        code: orNasty(fc.constantFrom("fx_reason", "unknown"), nastyString()),
        label: nastyString(),
        description: nastyString(),
        archived: orNasty(fc.boolean()),
      }),
  },
  // Durable redrives: the fixtures hold no DEAD job, so a create that passes validation is a 400 too (nothing to redrive).
  { path: "dlq.redrives.preview", type: "mutation", numRuns: 20, input: () => fc.record({ selection: redriveSelection(), force: orNasty(fc.boolean()) }) },
  {
    path: "dlq.redrives.create",
    type: "mutation",
    numRuns: 15,
    input: () =>
      optional({ selection: redriveSelection(), rate_per_s: orNasty(fc.double({ min: -1, max: 20_000, noNaN: true }), nastyNumber), reason: nastyString() }),
  },
  { path: "dlq.redrives.get", type: "query", numRuns: 10, input: () => orNasty(fc.record({ id: orNasty(fc.uuid(), nastyString()) })) },
  {
    path: "dlq.redrives.abort",
    type: "mutation",
    numRuns: 10,
    input: () => orNasty(optional({ id: orNasty(fc.uuid(), nastyString()), reason: nastyString() })),
  },
];

describe("bad input: 4xx with a message, never 5xx, nothing changed", () => {
  for (const procedure of PROCEDURES) {
    it(`${procedure.path} (${procedure.numRuns} generated inputs)`, async () => {
      const property = procedure.key
        ? fc.asyncProperty(procedure.input(), keys(), (input, key) => holds(procedure.path, procedure.type, input, key))
        : fc.asyncProperty(procedure.input(), (input) => holds(procedure.path, procedure.type, input));
      await fc.assert(property as fc.IAsyncProperty<unknown>, runs(procedure.numRuns));
    });
  }
});
