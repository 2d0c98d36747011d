import { randomUUID } from "node:crypto";
import { countStored } from "@porter/api/testing/fixtures";
import { claimJobs } from "@porter/core/sql/claim-jobs";
import { controlPlane } from "@porter/core/testing/control-plane-factory";
import { useTestDatabase } from "@porter/db/testing/test-database";
import pg from "pg";
import { beforeAll, describe, expect, it } from "vitest";
import { enqueue, type TransactionalEnqueueRequest } from "./enqueue-in-transaction";
import { ProducerError } from "./producer";

// Issue 11, point 4: a producer sharing Porter's database enqueues inside its own transaction. The
// producer connects as the runtime role (porter_app): its grants are the authority, each job names
// its tenant.
const db = useTestDatabase();

beforeAll(async () => {
  await controlPlane(db.pool, {
    pool: "tx-pool",
    queues: [{ id: "tx-q" }, { id: "tx-q2" }],
    tenants: ["tx_a", { id: "tx_capped", backlog_cap: 2 }],
  });
});

const job = (overrides: Partial<TransactionalEnqueueRequest> = {}): TransactionalEnqueueRequest => ({
  job_type: "tx-q.job",
  tenant_id: "tx_a",
  payload: { order: randomUUID() },
  idempotency_key: `k-${randomUUID()}`,
  ...overrides,
});

/** Runs `fn` in a transaction of the producer's own on one connection, then commits or rolls back. */
const producerTx = async <T>(isCommit: boolean, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> => {
  const client = await db.appPool.connect();
  try {
    await client.query("BEGIN");
    const result = await fn(client);
    await client.query(isCommit ? "COMMIT" : "ROLLBACK");
    return result;
  } catch (error) {
    await client.query("ROLLBACK");
    throw error;
  } finally {
    client.release();
  }
};

const failure = async (call: Promise<unknown>): Promise<ProducerError> => {
  const error = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ProducerError);
  return error as ProducerError;
};

const stateOf = async (jobId: string): Promise<string | undefined> =>
  (await db.pool.query<{ state: string }>(`SELECT state FROM jobs WHERE job_id = $1`, [jobId])).rows[0]?.state;

describe("enqueue(client, jobs) in the producer's transaction", () => {
  it("commit: the job appears only at the commit, and a worker claims it", async () => {
    const claim = () => claimJobs(db.pool, { poolId: "tx-pool", workerId: "w-commit", limit: 10 });
    const [result] = await producerTx(true, async (client) => {
      const results = await enqueue(client, [job()]);
      expect(results).toEqual([{ job_id: expect.any(String), status: "READY", deduplicated: false }]);
      // Before the commit: invisible to every other session, so nothing to claim.
      expect(await stateOf(results[0]!.job_id)).toBeUndefined();
      expect(await claim()).toEqual([]);
      // The caller's durability is its own: enqueue set nothing on its transaction.
      const { rows } = await client.query<{ setting: string }>(`SELECT current_setting('synchronous_commit') AS setting`);
      expect(rows[0]!.setting).toBe("on");
      return results;
    });
    expect(await stateOf(result!.job_id)).toBe("READY");
    expect((await claim()).map((c) => c.jobId)).toEqual([result!.job_id]);
  });

  it("wakes workers at the commit, not before", async () => {
    const listener = new pg.Client({ connectionString: db.connectionString });
    await listener.connect();
    const heard: string[] = [];
    listener.on("notification", (n) => heard.push(n.payload ?? ""));
    try {
      await listener.query("LISTEN porter_ready");
      const roundTrip = () => listener.query("SELECT 1"); // notifications arrive before its answer
      await producerTx(true, async (client) => {
        await enqueue(client, [job()]);
        await roundTrip();
        expect(heard).toEqual([]);
      });
      await expect.poll(() => heard).toEqual(["tx-pool"]);
    } finally {
      await listener.end();
    }
  });

  it("runs in a SERIALIZABLE transaction too", async () => {
    const client = await db.appPool.connect();
    try {
      await client.query("BEGIN ISOLATION LEVEL SERIALIZABLE");
      const [result] = await enqueue(client, [job()]);
      await client.query("COMMIT");
      expect(await stateOf(result!.job_id)).toBe("READY");
    } finally {
      client.release();
    }
  });

  it("SERIALIZABLE: two producers cannot both pass a backlog cap only one fits (one fails with 40001)", async () => {
    await db.pool.query(`INSERT INTO tenants (id, backlog_cap) VALUES ('tx_cap_one', 1)`);
    const [a, b] = [await db.appPool.connect(), await db.appPool.connect()];
    try {
      for (const c of [a, b]) {
        await c.query("BEGIN ISOLATION LEVEL SERIALIZABLE");
        await c.query("SELECT count(*) FROM jobs"); // both snapshots taken before either enqueues
      }
      await enqueue(a, [job({ tenant_id: "tx_cap_one" })]);
      // Another queue: no fair-clock row in common, only the tenant's backlog (counted across queues).
      const second = enqueue(b, [job({ tenant_id: "tx_cap_one", job_type: "tx-q2.job" })]).then(() => b.query("COMMIT"));
      await a.query("COMMIT");
      await expect(second).rejects.toMatchObject({ code: "40001" });
      await b.query("ROLLBACK");
    } finally {
      a.release();
      b.release();
    }
    const { rows } = await db.pool.query(`SELECT count(*)::int AS n FROM jobs WHERE tenant_id = 'tx_cap_one'`);
    expect(rows[0]!.n).toBe(1);
  });

  it("rollback: no row in jobs or idempotency_keys", async () => {
    const before = await countStored(db.pool);
    const results = await producerTx(false, (client) => enqueue(client, [job(), job(), job()]));
    expect(results).toHaveLength(3);
    expect(await countStored(db.pool)).toEqual(before);
    const { rows } = await db.pool.query(`SELECT 1 FROM idempotency_keys WHERE job_id = ANY($1::uuid[])`, [results.map((r) => r.job_id)]);
    expect(rows).toEqual([]);
  });

  it("is idempotent within a transaction and across transactions", async () => {
    const request = job();
    const [first, again] = await producerTx(true, async (client) => {
      const [a] = await enqueue(client, [request]);
      const [b] = await enqueue(client, [request]);
      return [a!, b!];
    });
    expect(again).toEqual({ ...first, deduplicated: true });
    const later = await producerTx(true, (client) => enqueue(client, [request, { ...request, payload: { ...request.payload } }]));
    expect(later).toEqual([
      { ...first, deduplicated: true },
      { ...first, deduplicated: true },
    ]);
    const conflict = await producerTx(true, (client) => failure(enqueue(client, [{ ...request, payload: { other: 1 } }])));
    expect(conflict).toMatchObject({ status: 409, code: "CONFLICT", isRetryable: false, details: { job_id: first!.job_id } });
  });

  it("waits for a concurrent transaction holding the same key, then returns its job", async () => {
    const request = job();
    const holder = await db.appPool.connect();
    try {
      await holder.query("BEGIN");
      const [held] = await enqueue(holder, [request]);
      const waiting = producerTx(true, (client) => enqueue(client, [request]));
      await new Promise((resolve) => setTimeout(resolve, 200));
      await holder.query("COMMIT");
      expect(await waiting).toEqual([{ ...held, deduplicated: true }]);
    } finally {
      holder.release();
    }
  });

  it("refuses bad input with a typed error, stores nothing of that call, and leaves the transaction usable", async () => {
    const before = await countStored(db.pool);
    const existing = job();
    await producerTx(true, (client) => enqueue(client, [existing]));
    const kept = await producerTx(true, async (client) => {
      const [first] = await enqueue(client, [job()]);
      expect(await failure(enqueue(client, [job({ priority: 500 })]))).toMatchObject({ status: 400, code: "BAD_REQUEST" });
      const { tenant_id: _none, ...noTenant } = job();
      expect(await failure(enqueue(client, [noTenant as TransactionalEnqueueRequest]))).toMatchObject({ status: 400, code: "BAD_REQUEST" });
      expect(await failure(enqueue(client, [job({ job_type: "tx.unknown" })]))).toMatchObject({ status: 400, code: "BAD_REQUEST" });
      expect(await failure(enqueue(client, [job({ payload: { blob: "z".repeat(65 * 1024) } })]))).toMatchObject({ status: 413 });
      // A batch refused after its first job was inserted: the savepoint takes that job back too.
      const conflict = await failure(enqueue(client, [job({ idempotency_key: "fresh-in-refused-batch" }), { ...existing, payload: { x: 1 } }]));
      expect(conflict).toMatchObject({ status: 409, code: "CONFLICT" });
      // Still usable: further statements and enqueues succeed, and the commit keeps them.
      const [second] = await enqueue(client, [job()]);
      return [first!.job_id, second!.job_id];
    });
    expect(await countStored(db.pool)).toEqual({ jobs: before.jobs + 3, keys: before.keys + 3 });
    for (const jobId of kept) expect(await stateOf(jobId)).toBe("READY");
    const { rows } = await db.pool.query(`SELECT 1 FROM idempotency_keys WHERE idempotency_key = 'fresh-in-refused-batch'`);
    expect(rows).toEqual([]);
  });

  it("validates before sending any statement (an aborted transaction still gets the 400)", async () => {
    await producerTx(false, async (client) => {
      await expect(client.query("SELECT 1/0")).rejects.toThrow();
      // Any statement now fails with 25P02; the validation error shows none was sent.
      expect(await failure(enqueue(client, [job({ priority: -1 })]))).toMatchObject({ status: 400, code: "BAD_REQUEST" });
      await expect(enqueue(client, [job()])).rejects.toMatchObject({ code: "25P02" });
    });
  });

  it("admission: a tenant over its backlog cap gets a 429 with retryAfterS; nothing is stored", async () => {
    await producerTx(true, (client) => enqueue(client, [job({ tenant_id: "tx_capped" }), job({ tenant_id: "tx_capped" })]));
    const before = await countStored(db.pool);
    await producerTx(true, async (client) => {
      const refused = await failure(enqueue(client, [job({ tenant_id: "tx_capped" })]));
      expect(refused).toMatchObject({ status: 429, code: "TOO_MANY_REQUESTS", isRetryable: true });
      expect(refused.retryAfterS).toBeGreaterThanOrEqual(1);
      // Under admission too, the caller's settings are its own, and its transaction goes on.
      const { rows } = await client.query<{ setting: string }>(`SELECT current_setting('synchronous_commit') AS setting`);
      expect(rows[0]!.setting).toBe("on");
      expect(await enqueue(client, [job()])).toHaveLength(1);
    });
    expect(await countStored(db.pool)).toEqual({ jobs: before.jobs + 1, keys: before.keys + 1 });
  });

  it("the database role is the authority: a member of porter_app enqueues, a role without grants is refused", async () => {
    const suffix = randomUUID().slice(0, 8);
    const member = `tx_member_${suffix}`;
    const stranger = `tx_stranger_${suffix}`;
    await db.pool.query(`CREATE ROLE ${member} LOGIN IN ROLE porter_app`);
    await db.pool.query(`CREATE ROLE ${stranger} LOGIN`);
    const connectAs = async (role: string) => {
      const url = new URL(db.connectionString);
      url.username = role;
      const client = new pg.Client({ connectionString: url.toString() });
      await client.connect();
      return client;
    };
    try {
      const asMember = await connectAs(member);
      try {
        await asMember.query("BEGIN");
        const [result] = await enqueue(asMember, [job()]);
        await asMember.query("COMMIT");
        expect(await stateOf(result!.job_id)).toBe("READY");
      } finally {
        await asMember.end();
      }
      const asStranger = await connectAs(stranger);
      try {
        await asStranger.query("BEGIN");
        await expect(enqueue(asStranger, [job()])).rejects.toMatchObject({ code: "42501" }); // insufficient_privilege
        // Rolled back to the savepoint: the stranger's transaction goes on.
        expect((await asStranger.query("SELECT 1 AS one")).rows).toEqual([{ one: 1 }]);
        await asStranger.query("ROLLBACK");
      } finally {
        await asStranger.end();
      }
    } finally {
      await db.pool.query(`DROP ROLE ${member}`);
      await db.pool.query(`DROP ROLE ${stranger}`);
    }
  });

  it("refuses to run outside a transaction, on a pool, or under REPEATABLE READ", async () => {
    const before = await countStored(db.pool);
    const client = await db.appPool.connect();
    try {
      await expect(enqueue(client, [job()])).rejects.toThrow(/BEGIN/);
    } finally {
      client.release();
    }
    await expect(enqueue(db.appPool as unknown as pg.PoolClient, [job()])).rejects.toThrow(TypeError);
    const repeatable = await db.appPool.connect();
    try {
      await repeatable.query("BEGIN ISOLATION LEVEL REPEATABLE READ");
      await expect(enqueue(repeatable, [job()])).rejects.toThrow(/REPEATABLE READ/);
      expect((await repeatable.query("SELECT 1 AS one")).rows).toEqual([{ one: 1 }]); // still usable
      await repeatable.query("ROLLBACK");
    } finally {
      repeatable.release();
    }
    expect(await countStored(db.pool)).toEqual(before);
  });
});
