import { randomUUID } from "node:crypto";
import { createStatusLink, enqueueJobs, PolicyCache, StreamHub } from "@porter/core";
import { useTestDatabase } from "@porter/db/testing/test-database";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { StreamLimiter } from "./events/sse";
import { callProcedure, fingerprint, type RawReply } from "./testing/bad-input";
import { moveJobs } from "./testing/console";
import { startEventsServer } from "./testing/events-server";
import { type ProducerFixtures, seedProducerFixtures } from "./testing/fixtures";
import { startTestServer, type TestServer } from "./testing/http-server";

// The isolation matrix: a credential of tenant A limited to job type X, against the objects it
// must not reach — a job of tenant B (type X) and a job of its own tenant of type Y — in every
// state a job can be found in (queued, running, finished). Reads and actions on such a job are a
// 404 exactly like an unknown id, and reveal nothing of it (no id, no payload); a request that is
// itself out of scope (enqueue for tenant B or type Y) is a 403; nothing changes either way.
// Over real HTTP. One row per (credential, procedure, target): a new procedure is one more row, and
// a tenant-facing credential (issue 13: tenant status tokens) is one more CREDENTIALS entry with
// its rows.
const db = useTestDatabase();
let server: TestServer;
let events: TestServer;
let hub: StreamHub;
let fx: ProducerFixtures;
/** A status link of tenant A limited to type X (the status stream's credential). */
let linkId: string;

beforeAll(async () => {
  fx = await seedProducerFixtures(db);
  server = await startTestServer({ db: db.pool, policyCache: new PolicyCache() });
  hub = new StreamHub({ pool: db.pool, listen: { connectionString: db.connectionString } });
  events = await startEventsServer({ db: db.pool, prisma: db.prisma, hub, limiter: new StreamLimiter() });
  linkId = (await createStatusLink(db.prisma, { tenantId: fx.tenantA, jobTypes: ["fx.email"], actor: "test" })).id;
});
afterAll(async () => {
  await server?.close();
  await events?.close();
  await hub?.close();
});

/** A job the credential must not reach, made fresh for each case (so a wrong cancel shows). */
type Target = { jobId: string; idempotencyKey: string; marker: string };
type TargetKind = "tenant B, type X" | "tenant A, type Y";
type TargetState = "READY" | "RUNNING" | "SUCCEEDED";

const makeTarget = async (kind: TargetKind, state: TargetState): Promise<Target> => {
  const marker = `secret-${randomUUID()}`;
  const idempotencyKey = `target-${randomUUID()}`;
  const [made] = await enqueueJobs(
    db.pool,
    [
      {
        job_type: kind === "tenant B, type X" ? "fx.email" : "fx.parse",
        tenant_id: kind === "tenant B, type X" ? fx.tenantB : fx.tenantA,
        payload: { marker },
        idempotency_key: idempotencyKey,
      },
    ],
    { notify: false },
  );
  if (state !== "READY") await moveJobs(db.pool, [made!.job_id], state);
  return { jobId: made!.job_id, idempotencyKey, marker };
};

type Credential = { name: string; call: (path: string, type: "query" | "mutation", input: unknown) => Promise<RawReply> };
const CREDENTIALS: Record<"producer key of tenant A, type X", () => Credential> = {
  "producer key of tenant A, type X": () => ({
    name: "producer key of tenant A, type X",
    call: (path, type, input) => callProcedure(server.url, path, type, input, fx.keyEmailOnly),
  }),
};

type Row = {
  credential: keyof typeof CREDENTIALS;
  procedure: string;
  type: "query" | "mutation";
  against: TargetKind;
  states: TargetState[];
  expect: 404 | 403 | 409;
  input: (t: Target) => unknown;
};
const ALL_STATES: TargetState[] = ["READY", "RUNNING", "SUCCEEDED"];
const X = "fx.email";
const job = (over: Record<string, unknown> = {}) => ({ job_type: X, payload: { ref: "s3://mine" }, idempotency_key: `mine-${randomUUID()}`, ...over });

const ROWS: Row[] = [
  ...(["tenant B, type X", "tenant A, type Y"] as const).flatMap((against): Row[] => [
    {
      credential: "producer key of tenant A, type X",
      procedure: "producer.get",
      type: "query",
      against,
      states: ALL_STATES,
      expect: 404,
      input: (t) => ({ job_id: t.jobId }),
    },
    {
      credential: "producer key of tenant A, type X",
      procedure: "producer.cancel",
      type: "mutation",
      against,
      states: ALL_STATES,
      expect: 404,
      input: (t) => ({ job_id: t.jobId, reason: "x" }),
    },
  ]),
  // The request itself out of scope: 403, as DESIGN's producer contract says.
  {
    credential: "producer key of tenant A, type X",
    procedure: "producer.enqueue",
    type: "mutation",
    against: "tenant B, type X",
    states: ["READY"],
    expect: 403,
    input: () => job({ tenant_id: fx.tenantB }),
  },
  {
    credential: "producer key of tenant A, type X",
    procedure: "producer.enqueue",
    type: "mutation",
    against: "tenant A, type Y",
    states: ["READY"],
    expect: 403,
    input: () => job({ job_type: "fx.parse" }),
  },
  {
    credential: "producer key of tenant A, type X",
    procedure: "producer.enqueueBatch",
    type: "mutation",
    against: "tenant B, type X",
    states: ["READY"],
    expect: 403,
    input: () => ({ jobs: [job(), job({ tenant_id: fx.tenantB })] }),
  },
  {
    credential: "producer key of tenant A, type X",
    procedure: "producer.enqueueBatch",
    type: "mutation",
    against: "tenant A, type Y",
    states: ["READY"],
    expect: 403,
    input: () => ({ jobs: [job(), job({ job_type: "fx.parse" })] }),
  },
  // Reusing the idempotency key of an own-tenant job of type Y: a conflict, but one that does not
  // name the job (its id is exactly what the key may not learn).
  {
    credential: "producer key of tenant A, type X",
    procedure: "producer.enqueue",
    type: "mutation",
    against: "tenant A, type Y",
    states: ALL_STATES,
    expect: 409,
    input: (t) => job({ idempotency_key: t.idempotencyKey }),
  },
  {
    credential: "producer key of tenant A, type X",
    procedure: "producer.enqueueBatch",
    type: "mutation",
    against: "tenant A, type Y",
    states: ALL_STATES,
    expect: 409,
    input: (t) => ({ jobs: [job(), job({ idempotency_key: t.idempotencyKey })] }),
  },
];

describe("isolation matrix: a credential of tenant A / type X against tenant B's jobs and type Y's", () => {
  for (const row of ROWS) {
    for (const state of row.states) {
      it(`${row.credential}: ${row.procedure} against a ${state} job of ${row.against} → ${row.expect}`, async () => {
        const target = await makeTarget(row.against, state);
        const credential = CREDENTIALS[row.credential]();
        const before = await fingerprint(db.pool);
        const reply = await credential.call(row.procedure, row.type, row.input(target));
        expect(reply.status, reply.text.slice(0, 400)).toBe(row.expect);
        expect(reply.text, "the reply reveals the job").not.toContain(target.marker);
        if (row.procedure !== "producer.get" && row.procedure !== "producer.cancel") expect(reply.text).not.toContain(target.jobId);
        expect(await fingerprint(db.pool), "something changed").toEqual(before);
      });
    }
  }

  it("the answer for an out-of-scope job is the answer for an unknown one (same status, same message shape)", async () => {
    const credential = CREDENTIALS["producer key of tenant A, type X"]();
    for (const against of ["tenant B, type X", "tenant A, type Y"] as const) {
      const target = await makeTarget(against, "READY");
      for (const [procedure, type] of [
        ["producer.get", "query"],
        ["producer.cancel", "mutation"],
      ] as const) {
        const unknown = randomUUID();
        const theirs = JSON.parse((await credential.call(procedure, type, { job_id: target.jobId })).text);
        const none = JSON.parse((await credential.call(procedure, type, { job_id: unknown })).text);
        expect(theirs.error.message.replace(target.jobId, "<id>")).toBe(none.error.message.replace(unknown, "<id>"));
        expect(theirs.error.data).toEqual(none.error.data);
      }
    }
  });

  it("its own jobs of type X stay reachable (the matrix is not passing because everything is refused)", async () => {
    const credential = CREDENTIALS["producer key of tenant A, type X"]();
    const made = JSON.parse((await credential.call("producer.enqueue", "mutation", job())).text).result.data;
    expect((await credential.call("producer.get", "query", { job_id: made.job_id })).status).toBe(200);
    const cancelled = await credential.call("producer.cancel", "mutation", { job_id: made.job_id });
    expect(JSON.parse(cancelled.text).result.data).toEqual({ job_id: made.job_id, status: "CANCELLED" });
  });
});

// The live status stream (issue 13): `GET /api/events?job_id=` with the key, and
// `GET /status/<tenant A>/events?job_id=` with a status link of tenant A / type X, against the same
// targets: a 404 before any byte is streamed, shaped like an unknown job's, revealing nothing.
type StreamCredential = { name: string; get: (jobId: string) => Promise<{ status: number; text: string; type: string | null }> };
const read = async (res: Response) => ({ status: res.status, text: await res.text(), type: res.headers.get("content-type") });
const STREAM_CREDENTIALS: Array<() => StreamCredential> = [
  () => ({
    name: "producer key of tenant A, type X on /api/events",
    get: async (jobId) => read(await fetch(`${events.url}/api/events?job_id=${jobId}`, { headers: { authorization: `Bearer ${fx.keyEmailOnly}` } })),
  }),
  () => ({
    name: "status link of tenant A, type X on /status/<tenant A>/events",
    get: async (jobId) => read(await fetch(`${events.url}/status/${fx.tenantA}/events?job_id=${jobId}`, { headers: { "x-test-link": linkId } })),
  }),
];

describe("isolation matrix: the status stream endpoints", () => {
  for (const make of STREAM_CREDENTIALS) {
    for (const against of ["tenant B, type X", "tenant A, type Y"] as const) {
      for (const state of ALL_STATES) {
        it(`${make().name}: a ${state} job of ${against} → 404, as an unknown job`, async () => {
          const credential = make();
          const target = await makeTarget(against, state);
          const before = await fingerprint(db.pool);
          const reply = await credential.get(target.jobId);
          expect(reply.status, reply.text.slice(0, 400)).toBe(404);
          expect(reply.type).toBe("application/json");
          expect(reply.text).not.toContain(target.marker);
          expect(reply.text).toBe((await credential.get(randomUUID())).text);
          expect(await fingerprint(db.pool), "something changed").toEqual(before);
        });
      }
    }
    it(`${make().name}: its own job of type X streams (the 404s are not everything refused)`, async () => {
      const credential = make();
      const [own] = await enqueueJobs(db.pool, [{ job_type: "fx.email", tenant_id: fx.tenantA, payload: {}, idempotency_key: `own-${randomUUID()}` }]);
      const abort = new AbortController();
      const url = credential.name.startsWith("producer")
        ? `${events.url}/api/events?job_id=${own!.job_id}`
        : `${events.url}/status/${fx.tenantA}/events?job_id=${own!.job_id}`;
      const headers: Record<string, string> = credential.name.startsWith("producer")
        ? { authorization: `Bearer ${fx.keyEmailOnly}` }
        : { "x-test-link": linkId };
      const res = await fetch(url, { headers, signal: abort.signal });
      expect(res.status).toBe(200);
      const reader = res.body!.getReader();
      let text = "";
      while (!text.includes("event: job.ready")) text += new TextDecoder().decode((await reader.read()).value);
      abort.abort();
      expect(text).toContain(own!.job_id);
    });
  }
});
