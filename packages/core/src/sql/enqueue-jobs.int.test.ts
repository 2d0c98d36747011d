import { AppError } from "@porter/contracts";
import { useTestDatabase } from "@porter/db/testing/test-database";
import pg from "pg";
import { beforeAll, describe, expect, it } from "vitest";
import { controlPlane } from "../testing/control-plane-factory";
import { jobTableCounts, stateOf } from "../testing/fixtures";
import { type EnqueueInput, enqueueJobs, READY_CHANNEL } from "./enqueue-jobs";

const db = useTestDatabase();
const job = (over: Partial<EnqueueInput> = {}): EnqueueInput => ({
  job_type: "q1.job",
  tenant_id: "tenant_A",
  payload: { source_ref: "s3://bucket/a" },
  idempotency_key: `k-${Math.random()}`,
  ...over,
});
const expectAppError = async (promise: Promise<unknown>, code: AppError["code"]) => {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(AppError);
  expect((error as AppError).code).toBe(code);
};

beforeAll(async () => {
  await controlPlane(db.pool, {
    queues: [
      { id: "q1", max_priority: 80, max_attempts: 10, default_deadline_s: null },
      { id: "q2", default_deadline_s: 3600 },
    ],
    tenants: [{ id: "tenant_A" }, { id: "tenant_B", max_priority: 30 }],
  });
});

describe("enqueueJobs", () => {
  it("stores a READY job in the queue its type maps to, clamped by policy", async () => {
    const [result] = await enqueueJobs(db.pool, [job({ priority: 100, max_attempts: 50 })]);
    expect(result).toMatchObject({ status: "READY", deduplicated: false });
    const { rows } = await db.pool.query(`SELECT queue_id, priority, max_attempts, state FROM jobs WHERE job_id = $1`, [result!.job_id]);
    expect(rows[0]).toEqual({ queue_id: "q1", priority: 80, max_attempts: 10, state: "READY" });
  });

  it("clamps priority to the tenant's ceiling too", async () => {
    const [result] = await enqueueJobs(db.pool, [job({ tenant_id: "tenant_B", priority: 90 })]);
    const { rows } = await db.pool.query(`SELECT priority FROM jobs WHERE job_id = $1`, [result!.job_id]);
    expect(rows[0].priority).toBe(30);
  });

  it("applies the queue's default deadline and honours not_before", async () => {
    const notBefore = new Date(Date.now() + 60_000).toISOString();
    const [result] = await enqueueJobs(db.pool, [job({ job_type: "q2.job", not_before: notBefore })]);
    const { rows } = await db.pool.query(`SELECT run_at, deadline_at, created_at FROM jobs WHERE job_id = $1`, [result!.job_id]);
    expect(rows[0].run_at.toISOString()).toBe(notBefore);
    expect(rows[0].deadline_at.getTime() - rows[0].created_at.getTime()).toBe(3600_000);
  });

  it("returns the same job for the same key and payload, deduplicated", async () => {
    const first = job({ payload: { b: 1, a: 2 } });
    const [a] = await enqueueJobs(db.pool, [first]);
    const [b] = await enqueueJobs(db.pool, [{ ...first, payload: { a: 2, b: 1 } }]);
    expect(b).toEqual({ job_id: a!.job_id, status: "READY", deduplicated: true });
  });

  it("deduplicates against finished jobs too", async () => {
    const first = job();
    const [a] = await enqueueJobs(db.pool, [first]);
    await db.pool.query(
      `WITH done AS (DELETE FROM jobs WHERE job_id = $1 RETURNING *)
       INSERT INTO finished_jobs (id, job_id, job_type, queue_id, tenant_id, payload, priority, idempotency_key,
         state, attempt, max_attempts, timeout_s, run_at, trace_id, created_at, finished_at)
       SELECT id, job_id, job_type, queue_id, tenant_id, payload, priority, idempotency_key, 'SUCCEEDED',
         1, max_attempts, timeout_s, run_at, trace_id, created_at, now() FROM done`,
      [a!.job_id],
    );
    const [b] = await enqueueJobs(db.pool, [first]);
    expect(b).toEqual({ job_id: a!.job_id, status: "SUCCEEDED", deduplicated: true });
  });

  it("refuses the same key with another payload (409) and stores nothing of the batch", async () => {
    const first = job();
    await enqueueJobs(db.pool, [first]);
    const before = await jobTableCounts(db.pool);
    await expectAppError(enqueueJobs(db.pool, [job(), { ...first, payload: { other: true } }]), "CONFLICT");
    expect(await jobTableCounts(db.pool)).toEqual(before);
  });

  it("compares payloads by content, not key order, and counts the job type as content", async () => {
    const first = job({ payload: { a: 1, b: { c: [1, 2], d: "x" } } });
    const [a] = await enqueueJobs(db.pool, [first]);
    const [b] = await enqueueJobs(db.pool, [{ ...first, payload: { b: { d: "x", c: [1, 2] }, a: 1 } }]);
    expect(b).toEqual({ job_id: a!.job_id, status: "READY", deduplicated: true });
    await expectAppError(enqueueJobs(db.pool, [{ ...first, payload: { a: 1, b: { c: [2, 1], d: "x" } } }]), "CONFLICT");
    await expectAppError(enqueueJobs(db.pool, [{ ...first, job_type: "q2.job" }]), "CONFLICT");
  });

  it("notifies each pool with runnable new work once per call, at commit; not for duplicates or future jobs", async () => {
    const listener = new pg.Client(db.connectionString);
    await listener.connect();
    const heard: string[] = [];
    listener.on("notification", (n) => heard.push(n.payload ?? ""));
    await listener.query(`LISTEN ${READY_CHANNEL}`);
    const settle = () => listener.query("SELECT 1").then(() => new Promise((r) => setTimeout(r, 50)));
    try {
      const one = job();
      await enqueueJobs(db.pool, [one]);
      await settle();
      expect(heard).toEqual(["p1"]);
      // Three jobs of two queues of the same pool: one notification.
      await enqueueJobs(db.pool, [job(), job(), job({ job_type: "q2.job" })]);
      await settle();
      expect(heard).toEqual(["p1", "p1"]);
      await enqueueJobs(db.pool, [one]);
      await enqueueJobs(db.pool, [job({ not_before: new Date(Date.now() + 60_000).toISOString() })]);
      await settle();
      expect(heard).toEqual(["p1", "p1"]);
    } finally {
      await listener.end();
    }
  });

  it("coalesces concurrent single enqueues into shared statements, each job keeping its own answer", async () => {
    const shared = job();
    const calls = [
      ...Array.from({ length: 40 }, () => job()),
      shared,
      { ...shared }, // same key, same payload: the same job
      { ...shared, payload: { other: true } }, // same key, another payload: 409 for this call only
    ];
    const settled = await Promise.allSettled(calls.map((c) => enqueueJobs(db.pool, [c])));
    const ok = settled.flatMap((r) => (r.status === "fulfilled" ? r.value : []));
    const refused = settled.flatMap((r) => (r.status === "rejected" ? [r.reason as AppError] : []));
    expect(settled.slice(0, 40).every((r) => r.status === "fulfilled")).toBe(true);
    // The shared key is one job, of whichever payload's statement commits first: the two calls
    // with the same payload get that job (one deduplicated) and the other is a 409, or, when the
    // other payload's statement (coalesced apart) commits first, both of them are refused.
    if (settled[42]!.status === "rejected") {
      expect(refused.map((e) => [e.code, e.details?.index])).toEqual([["CONFLICT", 0]]);
      expect(ok).toHaveLength(42);
      expect(new Set([ok[40]!.job_id, ok[41]!.job_id]).size).toBe(1);
      expect(ok.filter((r) => r.deduplicated)).toHaveLength(1);
    } else {
      expect(refused.map((e) => [e.code, e.details?.index])).toEqual([
        ["CONFLICT", 0],
        ["CONFLICT", 0],
      ]);
      expect(ok).toHaveLength(41);
    }
    const ids = [...new Set(ok.map((r) => r.job_id))];
    const { rows } = await db.pool.query<{ n: number; tx: number }>(
      `SELECT count(*)::int AS n, count(DISTINCT xmin::text)::int AS tx FROM jobs WHERE job_id = ANY($1::uuid[])`,
      [ids],
    );
    expect(rows[0]!.n).toBe(41);
    // Jobs written by one statement share its transaction id: far fewer transactions than calls.
    expect(rows[0]!.tx).toBeLessThan(20);
  });

  it("gives coalesced single enqueues of one tenant consecutive virtual times, one weight step apart", async () => {
    const results = await Promise.all(Array.from({ length: 30 }, () => enqueueJobs(db.pool, [job({ tenant_id: "tenant_B" })])));
    const ids = results.map(([r]) => r!.job_id);
    const { rows } = await db.pool.query<{ vft: number }>(`SELECT vft FROM jobs WHERE job_id = ANY($1::uuid[]) ORDER BY vft`, [ids]);
    const steps = rows.slice(1).map((r, i) => r.vft - rows[i]!.vft);
    expect(rows).toHaveLength(30);
    expect(steps.every((d) => Math.abs(d - 1) < 1e-9)).toBe(true); // tenant_B's weight is 1
  });

  it("stores strings exactly, whatever they contain (quotes, backslashes, braces, commas, NULL, unicode)", async () => {
    const tricky = ['a"b', "back\\slash\\", "{x,y}", "NULL", "", "tab\tnew\nline", "ünï 🎉", " spaced "];
    const jobs = tricky.map((text, i) =>
      job({
        idempotency_key: `${text}-${i}-${Math.random()}`,
        trace_id: `t${i}${text}`.slice(0, 100) || `t${i}`,
        payload: { text, nested: { list: [text, null, 1.5] } },
      }),
    );
    const results = await enqueueJobs(db.pool, jobs);
    const { rows } = await db.pool.query<{ job_id: string; idempotency_key: string; trace_id: string; payload: unknown }>(
      `SELECT job_id::text, idempotency_key, trace_id, payload FROM jobs WHERE job_id = ANY($1::uuid[])`,
      [results.map((r) => r.job_id)],
    );
    const byId = new Map(rows.map((r) => [r.job_id, r]));
    results.forEach((r, i) => {
      const row = byId.get(r.job_id)!;
      expect(row.idempotency_key).toBe(jobs[i]!.idempotency_key);
      expect(row.trace_id).toBe(jobs[i]!.trace_id);
      expect(row.payload).toEqual(jobs[i]!.payload);
    });
  });

  it("refuses a conflicting duplicate inside one batch", async () => {
    const before = await jobTableCounts(db.pool);
    const dup = job();
    await expectAppError(enqueueJobs(db.pool, [dup, { ...dup, payload: { x: 1 } }]), "CONFLICT");
    expect(await jobTableCounts(db.pool)).toEqual(before);
  });

  it("deduplicates an identical duplicate inside one batch", async () => {
    const dup = job();
    const [a, b] = await enqueueJobs(db.pool, [dup, dup]);
    expect(b).toEqual({ job_id: a!.job_id, status: "READY", deduplicated: true });
  });

  it("refuses oversize payloads with 413 and a hint to pass a reference", async () => {
    const before = await jobTableCounts(db.pool);
    const error = await enqueueJobs(db.pool, [job(), job({ payload: { blob: "x".repeat(70_000) } })]).catch((e: AppError) => e);
    expect(error).toMatchObject({ code: "PAYLOAD_TOO_LARGE" });
    expect((error as AppError).message).toMatch(/reference/);
    expect(await jobTableCounts(db.pool)).toEqual(before);
  });

  it("refuses unknown job types and tenants with 400", async () => {
    await expectAppError(enqueueJobs(db.pool, [job({ job_type: "nope" })]), "BAD_REQUEST");
    await expectAppError(enqueueJobs(db.pool, [job({ tenant_id: "tenant_Z" })]), "BAD_REQUEST");
  });

  it("stores a batch of 1000 in input order", async () => {
    const inputs = Array.from({ length: 1000 }, (_, i) => job({ payload: { i } }));
    const results = await enqueueJobs(db.pool, inputs);
    expect(results).toHaveLength(1000);
    const { rows } = await db.pool.query<{ job_id: string; i: number }>(
      `SELECT job_id::text, (payload->>'i')::int AS i FROM jobs WHERE job_id = ANY($1::uuid[])`,
      [results.map((r) => r.job_id)],
    );
    const byId = new Map(rows.map((r) => [r.job_id, r.i]));
    for (const [i, r] of results.entries()) expect(byId.get(r.job_id)).toBe(i);
  });

  it("enqueues inside the caller's transaction: rolled back, nothing stays", async () => {
    const client = await db.pool.connect();
    let jobId: string;
    try {
      await client.query("BEGIN");
      await client.query(`INSERT INTO diag_effects (key, applied) VALUES ('outbox-rollback', 1)`);
      const [r] = await enqueueJobs(client, [job()]);
      jobId = r!.job_id;
      await client.query("ROLLBACK");
    } finally {
      client.release();
    }
    expect(await stateOf(db.pool, jobId)).toBeNull();
  });

  it("enqueues inside the caller's transaction: committed with the caller's own write", async () => {
    const client = await db.pool.connect();
    let jobId: string;
    try {
      await client.query("BEGIN");
      await client.query(`INSERT INTO diag_effects (key, applied) VALUES ('outbox-commit', 1)`);
      const [r] = await enqueueJobs(client, [job()]);
      jobId = r!.job_id;
      expect(await stateOf(db.pool, jobId)).toBeNull(); // not visible before commit
      await client.query("COMMIT");
    } finally {
      client.release();
    }
    expect(await stateOf(db.pool, jobId)).toBe("READY");
  });

  it("answers a batch that meets an existing key in its last chunk: the rest new, that one deduplicated, nothing twice", async () => {
    // The batch's keys first go in by a plain insert, which fails on the existing key after three
    // chunks of 250 are in; the transaction is rolled back and the batch resolved with ON CONFLICT.
    const old = job({ payload: { old: true } });
    const [a] = await enqueueJobs(db.pool, [old, job()]);
    const inputs = [...Array.from({ length: 999 }, (_, i) => job({ payload: { i } })), old];
    const before = await jobTableCounts(db.pool);
    const { rows: stream0 } = await db.pool.query<{ n: number }>(`SELECT coalesce(sum(cardinality(job_ids)), 0)::int AS n FROM job_stream`);
    const results = await enqueueJobs(db.pool, inputs);
    expect(results[999]).toEqual({ job_id: a!.job_id, status: "READY", deduplicated: true });
    expect(results.slice(0, 999).every((r) => r.status === "READY" && !r.deduplicated)).toBe(true);
    const after = await jobTableCounts(db.pool);
    expect(after.jobs - before.jobs).toBe(999);
    const { rows: stream1 } = await db.pool.query<{ n: number }>(`SELECT coalesce(sum(cardinality(job_ids)), 0)::int AS n FROM job_stream`);
    expect(stream1[0]!.n - stream0[0]!.n).toBe(999); // one READY event per new job, none from the rolled-back try
    const { rows } = await db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM jobs WHERE job_id = ANY($1::uuid[])`, [results.map((r) => r.job_id)]);
    expect(rows[0]!.n).toBe(1000);
  });

  it("lets concurrent batches with the same keys create each job once, all answering the same ids", async () => {
    const inputs = Array.from({ length: 300 }, (_, i) => job({ payload: { i } }));
    const results = await Promise.all(Array.from({ length: 4 }, () => enqueueJobs(db.pool, inputs)));
    const ids = results[0]!.map((r) => r.job_id);
    for (const r of results) expect(r.map((x) => x.job_id)).toEqual(ids);
    expect(results.flat().filter((r) => !r.deduplicated)).toHaveLength(300);
    const { rows } = await db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM jobs WHERE job_id = ANY($1::uuid[])`, [ids]);
    expect(rows[0]!.n).toBe(300);
  });

  it("lets exactly one of many concurrent producers create a keyed job", async () => {
    const input = job();
    const results = await Promise.all(Array.from({ length: 8 }, () => enqueueJobs(db.pool, [input])));
    const ids = new Set(results.map((r) => r[0]!.job_id));
    expect(ids.size).toBe(1);
    expect(results.filter((r) => !r[0]!.deduplicated)).toHaveLength(1);
  });
});
