import { useTestDatabase } from "@porter/db/testing/test-database";
import { beforeAll, describe, expect, it } from "vitest";
import { controlPlane } from "../testing/control-plane-factory";
import { EXPIRE_JOBS_SQL, expireJobs } from "./expire-jobs";

// The maintenance pass's expiry and promotion at a backlog: what it moves, and that it finds it
// through indexes. It runs on every pass; a sequential scan of jobs there read the whole table
// each time (423 ms at 1M ready jobs).

const db = useTestDatabase();

const insertJobs = (sql: { count: number; prefix: string; state: string; runAt: string; deadline?: string }) =>
  db.pool.query(
    `INSERT INTO jobs (job_id, job_type, queue_id, tenant_id, payload, priority, idempotency_key, state, max_attempts, timeout_s, run_at, deadline_at, trace_id)
     SELECT gen_random_uuid(), 'qa.job', 'qa', 'tenant_A', '{}', 50, '${sql.prefix}' || i, '${sql.state}', 5, 300, ${sql.runAt}, ${sql.deadline ?? "NULL"}, 't'
       FROM generate_series(1, ${sql.count}) i`,
  );

const countByState = async () => {
  const { rows } = await db.pool.query<{ state: string; n: number }>(
    `SELECT state::text, count(*)::int AS n FROM jobs WHERE idempotency_key NOT LIKE 'bulk%' GROUP BY 1`,
  );
  return Object.fromEntries(rows.map((r) => [r.state, r.n]));
};

beforeAll(async () => {
  await controlPlane(db.pool, { pool: "pa", queues: [{ id: "qa" }] });
  // The backlog: 50k ready jobs without deadlines, as a pass meets it most of the time.
  await insertJobs({ count: 50_000, prefix: "bulk", state: "READY", runAt: "now() - make_interval(secs => i % 1000)" });
  await db.pool.query("ANALYZE jobs");
});

describe("the maintenance pass's expiry and promotion", () => {
  it("reads jobs through indexes at a 50k backlog: no Seq Scan of jobs", async () => {
    const client = await db.pool.connect();
    try {
      await client.query("BEGIN");
      const { rows } = await client.query<{ "QUERY PLAN": string }>(`EXPLAIN (ANALYZE, COSTS OFF) ${EXPIRE_JOBS_SQL}`, [null, 1000]);
      const plan = rows.map((r) => r["QUERY PLAN"]).join("\n");
      expect(plan).not.toMatch(/Seq Scan on jobs/);
      expect(plan).toMatch(/jobs_deadline_idx/);
      expect(plan).toMatch(/jobs_retry_wait_idx/);
    } finally {
      await client.query("ROLLBACK");
      client.release();
    }
  });

  it("promotes the due retries, expires the late jobs, and leaves the rest", async () => {
    await insertJobs({ count: 3, prefix: "due", state: "RETRY_WAIT", runAt: "now() - interval '1 second'" });
    await insertJobs({ count: 2, prefix: "later", state: "RETRY_WAIT", runAt: "now() + interval '1 hour'" });
    await insertJobs({ count: 4, prefix: "late", state: "READY", runAt: "now()", deadline: "now() - interval '1 second'" });
    expect(await countByState()).toEqual({ RETRY_WAIT: 5, READY: 4 });
    expect(await expireJobs(db.pool)).toEqual({ expired: 4, promoted: 3 });
    expect(await countByState()).toEqual({ RETRY_WAIT: 2, READY: 3 });
    const { rows } = await db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM finished_jobs WHERE state = 'EXPIRED'`);
    expect(rows[0]!.n).toBe(4);
    expect(await expireJobs(db.pool)).toEqual({ expired: 0, promoted: 0 });
  });
});
