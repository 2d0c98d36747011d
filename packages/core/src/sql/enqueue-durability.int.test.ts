import { createPool } from "@porter/db/pool";
import { useTestDatabase } from "@porter/db/testing/test-database";
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { controlPlane } from "../testing/control-plane-factory";
import { stateOf } from "../testing/fixtures";
import { type EnqueueInput, enqueueJobs } from "./enqueue-jobs";

// Issue 9, defect 14: enqueue must never change a setting of a transaction Porter does not own
// (it used to turn the caller's COMMIT asynchronous), and the transaction that carries an
// acknowledged enqueue must commit durably — also Porter's own one under admission control.

const db = useTestDatabase();
const job = (over: Partial<EnqueueInput> = {}): EnqueueInput => ({
  job_type: "q1.job",
  tenant_id: "tenant_A",
  payload: { source_ref: "s3://bucket/a" },
  idempotency_key: `k-${Math.random()}`,
  ...over,
});
const setting = async (client: pg.PoolClient) => (await client.query<{ s: string }>(`SELECT current_setting('synchronous_commit') AS s`)).rows[0]!.s;

/** A pool whose clients report the transaction's synchronous_commit just before each COMMIT they send. */
const committing = (connectionString: string) => {
  const seen: string[] = [];
  const pool = createPool(connectionString, { max: 2 });
  const patched = new WeakSet<pg.PoolClient>();
  pool.on("acquire", (client) => {
    if (patched.has(client)) return;
    patched.add(client);
    const query = client.query.bind(client) as (...args: unknown[]) => Promise<pg.QueryResult>;
    client.query = (async (...args: unknown[]) => {
      if (args[0] === "COMMIT") seen.push((await query(`SELECT current_setting('synchronous_commit') AS s`)).rows[0].s);
      return query(...args);
    }) as typeof client.query;
  });
  return { pool, seen };
};

let spy: ReturnType<typeof committing>;

beforeAll(async () => {
  await controlPlane(db.pool, { queues: [{ id: "q1" }], tenants: [{ id: "tenant_A" }, { id: "tenant_L" }] });
  // tenant_L has an admission limit: its enqueues take the admission transaction.
  await db.pool.query(`UPDATE tenants SET rate_per_second = 1000, backlog_cap = 100000 WHERE id = 'tenant_L'`);
  spy = committing(db.connectionString);
});

afterAll(async () => {
  await spy.pool.end();
});

describe("enqueue inside the caller's transaction", () => {
  it.each([
    ["one job", 1],
    ["a batch", 3],
    ["a batch of a tenant with admission limits", 3],
  ])("leaves the caller's synchronous_commit as it was (%s)", async (label, n) => {
    const tenant = label.includes("admission") ? "tenant_L" : "tenant_A";
    const client = await db.pool.connect();
    try {
      await client.query("BEGIN");
      expect(await setting(client)).toBe("on");
      await enqueueJobs(
        client,
        Array.from({ length: n }, () => job({ tenant_id: tenant })),
      );
      expect(await setting(client)).toBe("on");
      await client.query("ROLLBACK");

      // A setting the caller chose is kept too.
      await client.query("BEGIN");
      await client.query(`SET LOCAL synchronous_commit = 'remote_write'`);
      const results = await enqueueJobs(
        client,
        Array.from({ length: n }, () => job({ tenant_id: tenant })),
      );
      expect(await setting(client)).toBe("remote_write");
      await client.query("COMMIT");
      for (const r of results) expect(await stateOf(db.pool, r.job_id)).toBe("READY");
      expect(await setting(client)).toBe("on");
    } finally {
      client.release();
    }
  });
});

describe("enqueue in Porter's own transaction", () => {
  it("commits a tenant's admission-controlled enqueue synchronously (one job and a batch)", async () => {
    spy.seen.length = 0;
    const [one] = await enqueueJobs(spy.pool, [job({ tenant_id: "tenant_L" })]);
    const batch = await enqueueJobs(spy.pool, [job({ tenant_id: "tenant_L" }), job({ tenant_id: "tenant_L" })]);
    expect(spy.seen).toEqual(["on", "on"]);
    for (const r of [one!, ...batch]) expect(await stateOf(db.pool, r.job_id)).toBe("READY");
  });

  it("commits a batch without admission limits synchronously", async () => {
    spy.seen.length = 0;
    await enqueueJobs(spy.pool, [job(), job(), job()]);
    expect(spy.seen).toEqual(["on"]);
  });
});
