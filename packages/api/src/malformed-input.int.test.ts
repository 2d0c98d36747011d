import { randomUUID } from "node:crypto";
import { enqueueJobs, PolicyCache } from "@porter/core";
import { useTestDatabase } from "@porter/db/testing/test-database";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { callProcedure, DeepJson, fingerprint } from "./testing/bad-input";
import { type ProducerFixtures, seedProducerFixtures } from "./testing/fixtures";
import { startTestServer, type TestServer } from "./testing/http-server";

// Issue 9, defect 2: each of these was a 500 (PostgreSQL refused the value, or JSON.stringify
// overflowed the stack) or was accepted though it can never run. Each is a 400 now, refused by the
// zod contracts before anything reaches the database, with a message that says what is wrong —
// and nothing changed. The property suite (bad-input.int.test.ts) looks for the next one.
const db = useTestDatabase();
let server: TestServer;
let fx: ProducerFixtures;
let queuedJob: string;

beforeAll(async () => {
  fx = await seedProducerFixtures(db);
  const [made] = await enqueueJobs(db.pool, [{ job_type: "fx.email", tenant_id: fx.tenantA, payload: {}, idempotency_key: "queued" }]);
  queuedJob = made!.job_id;
  server = await startTestServer({
    db: db.pool,
    policyCache: new PolicyCache(),
    getSession: async () => ({ userId: "u-admin", email: "admin@example.com", role: "admin" }),
  });
});
afterAll(async () => {
  await server?.close();
});

const job = (over: Record<string, unknown> = {}) => ({ job_type: "fx.email", payload: { ref: "s3://a" }, idempotency_key: randomUUID(), ...over });
const NUL = /NUL character/;
const SURROGATE = /lone surrogate/;
const RANGE = /between 1970-01-01T00:00:00Z and 9999-12-31T23:59:59Z/;

type Case = [name: string, path: string, type: "query" | "mutation", input: () => unknown, message: RegExp];
const CASES: Case[] = [
  ["NUL in a payload value", "producer.enqueue", "mutation", () => job({ payload: { note: "a\u0000b" } }), /payload\.note: must not contain the NUL/],
  ["NUL in a payload key", "producer.enqueue", "mutation", () => job({ payload: { "k\u0000": 1 } }), /payload.*key must not contain the NUL/],
  ["NUL deep in a payload", "producer.enqueue", "mutation", () => job({ payload: { a: [{ b: ["x\u0000"] }] } }), /payload\.a\.0\.b\.0: must not/],
  ["a lone surrogate in a payload value", "producer.enqueue", "mutation", () => job({ payload: { s: "\ud800" } }), SURROGATE],
  ["a lone surrogate in a payload key", "producer.enqueue", "mutation", () => job({ payload: { "\udc00": 1 } }), SURROGATE],
  ["NUL in idempotency_key", "producer.enqueue", "mutation", () => job({ idempotency_key: "k\u0000" }), /idempotency_key: must not contain the NUL/],
  ["a lone surrogate in idempotency_key", "producer.enqueue", "mutation", () => job({ idempotency_key: "k\ud800" }), SURROGATE],
  ["NUL in trace_id", "producer.enqueue", "mutation", () => job({ trace_id: "t\u0000" }), /trace_id: must not contain the NUL/],
  ["year 0 in not_before", "producer.enqueue", "mutation", () => job({ not_before: "0000-01-01T00:00:00Z" }), RANGE],
  ["year 10000 (UTC) in deadline_at", "producer.enqueue", "mutation", () => job({ deadline_at: "9999-12-31T23:59:59-14:00" }), RANGE],
  ["year 0 in deadline_at", "producer.enqueue", "mutation", () => job({ deadline_at: "0000-01-01T00:00:00Z" }), RANGE],
  ["a payload nested 5000 deep", "producer.enqueue", "mutation", () => job({ payload: { deep: new DeepJson(5000, "array") } }), /deeper than 32 levels/],
  ["a payload nested 33 deep", "producer.enqueue", "mutation", () => job({ payload: { deep: new DeepJson(32, "object") } }), /deeper than 32 levels/],
  [
    "deadline_at before not_before",
    "producer.enqueue",
    "mutation",
    () => job({ not_before: "2099-01-02T00:00:00Z", deadline_at: "2099-01-01T00:00:00Z" }),
    /deadline_at: must be later than not_before/,
  ],
  [
    "deadline_at equal to not_before (another offset)",
    "producer.enqueue",
    "mutation",
    () => job({ not_before: "2099-01-01T02:00:00+02:00", deadline_at: "2099-01-01T00:00:00Z" }),
    /deadline_at: must be later than not_before/,
  ],
  [
    "NUL in one job of a batch",
    "producer.enqueueBatch",
    "mutation",
    () => ({ jobs: [job(), job(), job({ payload: { x: "\u0000" } })] }),
    /jobs\.2\.payload\.x: must not/,
  ],
  ["NUL in a cancel reason", "producer.cancel", "mutation", () => ({ job_id: queuedJob, reason: "no\u0000" }), /reason: must not contain the NUL/],
  ["a lone surrogate in a cancel reason", "producer.cancel", "mutation", () => ({ job_id: queuedJob, reason: "\udfff" }), SURROGATE],
  ["audit.list cursor 99999999999999999999", "audit.list", "query", () => ({ cursor: "99999999999999999999" }), /cursor.*previous page/],
  ["audit.list cursor 2^63", "audit.list", "query", () => ({ cursor: "9223372036854775808" }), /at most 9223372036854775807/],
  ["NUL in an audit filter", "audit.list", "query", () => ({ filter: { actor: "a\u0000" } }), NUL],
  ["year 0 in an audit filter", "audit.list", "query", () => ({ filter: { from: "0000-01-01T00:00:00Z" } }), RANGE],
  ["NUL in a jobs filter (tenant)", "jobs.list", "query", () => ({ filter: { tenant_id: "\u0000" } }), NUL],
  ["NUL in a jobs filter (idempotency key)", "jobs.counts", "query", () => ({ filter: { idempotency_key: "k\u0000" } }), NUL],
  ["a lone surrogate in a jobs filter (trace id)", "jobs.list", "query", () => ({ filter: { trace_id: "\ud800x" } }), SURROGATE],
  ["year 10000 in a jobs filter", "jobs.list", "query", () => ({ filter: { to: "9999-12-31T23:59:59-14:00" } }), RANGE],
  ["a jobs cursor that is not one", "jobs.list", "query", () => ({ cursor: "\u0000" }), /previous page/],
  ["NUL in a bulk action's filter", "jobs.cancel", "mutation", () => ({ selection: { filter: { queue_id: "\u0000" } }, dry_run: true }), NUL],
  ["NUL in a throughput queue", "overview.throughput", "query", () => ({ queue_id: "\u0000" }), NUL],
  ["an unknown flow window", "overview.series", "query", () => ({ window: "2h" }), /window: .*"15m"/],
  ["a flow window that is an object key", "overview.series", "query", () => ({ window: "constructor" }), /window/],
  ["NUL in a flow scope", "overview.series", "query", () => ({ window: "1h", tenant_id: "\u0000" }), NUL],
  ["a signals window past a day", "overview.signals", "query", () => ({ window_s: 86_401 }), /window_s/],
  ["NUL in a pause reason", "queues.pause", "mutation", () => ({ id: "fx-queue", reason: "\u0000" }), NUL],
  ["NUL in a tenant name", "tenants.update", "mutation", () => ({ id: fx.tenantA, patch: { name: "A\u0000" } }), NUL],
  ["NUL in a status origin", "tenants.update", "mutation", () => ({ id: fx.tenantA, patch: { status_origins: ["https://a\u0000b"] } }), NUL],
  ["NUL in a job type description", "jobTypes.update", "mutation", () => ({ id: "fx.other", patch: { description: "\u0000" } }), NUL],
  ["NUL in an API key name", "apiKeys.create", "mutation", () => ({ name: "\u0000", tenant_ids: [fx.tenantA], job_types: ["*"] }), NUL],
  ["NUL in an API key id", "apiKeys.revoke", "mutation", () => ({ id: "\u0000" }), NUL],
  ["NUL in a user id", "users.update", "mutation", () => ({ id: "\u0000", name: "x" }), NUL],
];

describe("malformed input is a 400 with a clear message, and changes nothing", () => {
  it.each(CASES)("%s (%s)", async (_name, path, type, input, message) => {
    const before = await fingerprint(db.pool);
    const reply = await callProcedure(server.url, path, type, input(), path.startsWith("producer.") ? fx.keyA : undefined);
    expect(reply.status, reply.text.slice(0, 500)).toBe(400);
    const body = JSON.parse(reply.text) as { error: { message: string; data: { appCode: string } } };
    expect(body.error.data.appCode).toBe("BAD_REQUEST");
    expect(body.error.message).toMatch(message);
    expect(await fingerprint(db.pool)).toEqual(before);
  });

  it("still accepts what is storable: a 32-deep payload, surrogate pairs, the range's edges, deadline after not_before", async () => {
    const accepted = await callProcedure(
      server.url,
      "producer.enqueue",
      "mutation",
      job({
        payload: { deep: new DeepJson(30, "object"), emoji: "😀 é", ключ: "значение" },
        idempotency_key: "k-😀",
        not_before: "1970-01-01T00:00:00Z",
        deadline_at: "9999-12-31T23:59:59Z",
      }),
      fx.keyA,
    );
    expect(accepted.status, accepted.text).toBe(200);
    const { job_id } = (JSON.parse(accepted.text) as { result: { data: { job_id: string } } }).result.data;
    const { rows } = await db.pool.query(`SELECT idempotency_key, payload ->> 'emoji' AS emoji FROM jobs WHERE job_id = $1`, [job_id]);
    expect(rows).toEqual([{ idempotency_key: "k-😀", emoji: "😀 é" }]);
  });
});
