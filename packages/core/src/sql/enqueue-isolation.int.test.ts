import { AppError } from "@porter/contracts";
import { useTestDatabase } from "@porter/db/testing/test-database";
import { beforeAll, describe, expect, it } from "vitest";
import { controlPlane } from "../testing/control-plane-factory";
import { type EnqueueInput, enqueueJobs } from "./enqueue-jobs";

// Concurrent single enqueues on one pool share statements (the coalescer in enqueue-jobs.ts). The
// contracts refuse what PostgreSQL cannot store, but core is also called without them (the CLI, an
// embedding service, a contract with a gap): a row PostgreSQL refuses must fail only its own call,
// with a 400, and never the other tenants' enqueues that happened to share its statement.
const db = useTestDatabase();

beforeAll(async () => {
  await controlPlane(db.pool, { queues: [{ id: "iso" }], tenants: [{ id: "tenant_A" }, { id: "tenant_B" }] });
});

const good = (i: number): EnqueueInput => ({ job_type: "iso.job", tenant_id: "tenant_A", payload: { ref: `s3://a/${i}` }, idempotency_key: `a-${i}` });

// Each one fails a different way inside PostgreSQL (SQLSTATE class 22), past any validation.
const BAD: Array<[string, (i: number) => EnqueueInput]> = [
  [
    "NUL in a payload value (jsonb, 22P05)",
    (i) => ({ job_type: "iso.job", tenant_id: "tenant_B", payload: { note: "a\u0000b" }, idempotency_key: `b-nul-${i}` }),
  ],
  ["NUL in a payload key", (i) => ({ job_type: "iso.job", tenant_id: "tenant_B", payload: { "k\u0000": 1 }, idempotency_key: `b-key-${i}` })],
  ["a lone surrogate in a payload value", (i) => ({ job_type: "iso.job", tenant_id: "tenant_B", payload: { s: "\ud800" }, idempotency_key: `b-sur-${i}` })],
  ["NUL in the idempotency key (text, 22021)", (i) => ({ job_type: "iso.job", tenant_id: "tenant_B", payload: {}, idempotency_key: `b-\u0000-${i}` })],
  [
    "year 0 in not_before (22008)",
    (i) => ({ job_type: "iso.job", tenant_id: "tenant_B", payload: {}, idempotency_key: `b-date-${i}`, not_before: "0000-01-01T00:00:00Z" }),
  ],
];

describe("coalesced single enqueues with a bad neighbour", () => {
  it("tenant_A's 200 concurrent enqueues all succeed while tenant_B's unstorable rows each fail alone with a 400", async () => {
    const calls: Array<{ tenant: string; promise: Promise<unknown> }> = [];
    for (let i = 0; i < 200; i++) {
      calls.push({ tenant: "tenant_A", promise: enqueueJobs(db.pool, [good(i)], { notify: false }) });
      // Interleaved, so nearly every coalesced statement holds one of B's rows.
      if (i % 4 === 0) {
        const [, bad] = BAD[(i / 4) % BAD.length]!;
        calls.push({ tenant: "tenant_B", promise: enqueueJobs(db.pool, [bad(i)], { notify: false }) });
      }
    }
    const outcomes = await Promise.allSettled(calls.map((c) => c.promise));
    const ofA = outcomes.filter((_, i) => calls[i]!.tenant === "tenant_A");
    const ofB = outcomes.filter((_, i) => calls[i]!.tenant === "tenant_B");
    expect(ofA.filter((o) => o.status === "rejected").map((o) => String((o as PromiseRejectedResult).reason))).toEqual([]);
    expect(ofB).toHaveLength(50);
    for (const o of ofB) {
      expect(o.status).toBe("rejected");
      const reason = (o as PromiseRejectedResult).reason;
      expect(reason).toBeInstanceOf(AppError);
      expect((reason as AppError).code).toBe("BAD_REQUEST");
      expect((reason as AppError).message).toMatch(/cannot be stored/);
    }
    const { rows } = await db.pool.query<{ tenant_id: string; n: string }>(`SELECT tenant_id, count(*) AS n FROM jobs GROUP BY tenant_id`);
    expect(rows).toEqual([{ tenant_id: "tenant_A", n: "200" }]);
    const keys = await db.pool.query<{ n: string }>(`SELECT count(*) AS n FROM idempotency_keys WHERE tenant_id = 'tenant_B'`);
    expect(keys.rows[0]!.n).toBe("0");
  });

  it.each(BAD)("a batch with %s is a 400 as a whole, and stores nothing", async (_name, bad) => {
    const before = await db.pool.query<{ n: string }>(`SELECT count(*) AS n FROM idempotency_keys`);
    const error = await enqueueJobs(db.pool, [good(1000 + Math.floor(Math.random() * 1e6)), bad(9999)]).then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(AppError);
    expect((error as AppError).code).toBe("BAD_REQUEST");
    // PostgreSQL's own message and context may quote the payload: only the SQLSTATE is passed on.
    // biome-ignore lint/suspicious/noControlCharactersInRegex: the check is that no NUL reaches the message
    expect((error as AppError).message).not.toMatch(/\\u0000|a\u0000b|JSON data|line 1/);
    const after = await db.pool.query<{ n: string }>(`SELECT count(*) AS n FROM idempotency_keys`);
    expect(after.rows[0]!.n).toBe(before.rows[0]!.n);
  });
});
