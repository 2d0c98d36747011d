import { useTestDatabase } from "@porter/db/testing/test-database";
import { beforeAll, describe, expect, it } from "vitest";
import { claimJobs } from "../sql/claim-jobs";
import { enqueueJobs } from "../sql/enqueue-jobs";
import { controlPlane } from "../testing/control-plane-factory";
import { killJobs } from "../testing/dead-jobs";
import { deadByQueue, liveJobCounts, OLDEST_READY_SQL, oldestReady, workersByState } from "./metrics-reads";

// The reads of the console's Prometheus endpoint: values against a known state, and the plan of
// the oldest-ready probe at a backlog (index scans only, no Seq Scan of jobs).
const db = useTestDatabase();
let n = 0;
const enqueue = (queue: string, tenant: string, count: number, extra: Record<string, unknown> = {}) =>
  enqueueJobs(
    db.pool,
    Array.from({ length: count }, () => ({ job_type: `${queue}.job`, tenant_id: tenant, payload: {}, idempotency_key: `k${++n}`, ...extra })),
    { notify: false },
  );

beforeAll(async () => {
  await controlPlane(db.pool, { pool: "pa", queues: [{ id: "qa" }, { id: "qb" }, { id: "qdead" }] });
  await controlPlane(db.pool, { pool: "pb", queues: [{ id: "qc" }] });
  await killJobs(db.pool, 2, { jobType: "qdead.job" }, "pa");
  await enqueue("qa", "tenant_A", 3);
  await enqueue("qa", "tenant_B", 2);
  await claimJobs(db.pool, { poolId: "pa", workerId: "w", limit: 1 });
});

describe("metrics reads", () => {
  it("live job counts per (queue, tenant, state), under a statement timeout", async () => {
    const counts = await liveJobCounts(db.pool, { timeoutMs: 2000 });
    const total = (q: string, s: string) => counts.filter((c) => c.queue_id === q && c.state === s).reduce((a, c) => a + c.count, 0);
    expect(total("qa", "READY")).toBe(4);
    expect(total("qa", "RUNNING")).toBe(1);
    expect(counts.filter((c) => c.queue_id === "qdead")).toEqual([]);
    // A timeout shorter than the statement cancels it (the read fails; the scrape reports porter_up 0).
    await db.pool.query(
      `INSERT INTO jobs (job_id, job_type, queue_id, tenant_id, payload, priority, idempotency_key, state, max_attempts, timeout_s, run_at, trace_id)
       SELECT gen_random_uuid(), 'qb.job', 'qb', 'tenant_A', '{}', 50, 'to' || i, 'READY', 5, 300, now(), 't' FROM generate_series(1, 50000) i`,
    );
    await expect(liveJobCounts(db.pool, { timeoutMs: 1 })).rejects.toThrow(/statement timeout/);
    await db.pool.query(`DELETE FROM jobs WHERE idempotency_key LIKE 'to%'`);
  });

  it("oldest ready per queue, counting priority 100 and retries whose time came only", async () => {
    await db.pool.query(`UPDATE jobs SET run_at = now() - interval '120 seconds' WHERE queue_id = 'qa' AND state = 'READY' AND tenant_id = 'tenant_B'`);
    await enqueue("qb", "tenant_A", 1, { priority: 100 });
    await db.pool.query(`UPDATE jobs SET run_at = now() - interval '300 seconds' WHERE queue_id = 'qb'`);
    await enqueue("qc", "tenant_A", 1);
    await db.pool.query(`UPDATE jobs SET state = 'RETRY_WAIT', run_at = now() + interval '1 hour' WHERE queue_id = 'qc'`);
    const byQueue = new Map((await oldestReady(db.pool)).map((r) => [r.queue_id, r.oldest_s]));
    expect(byQueue.get("qa")).toBeGreaterThanOrEqual(120);
    expect(byQueue.get("qa")).toBeLessThan(200);
    expect(byQueue.get("qb")).toBeGreaterThanOrEqual(300);
    expect(byQueue.get("qc")).toBeNull();
    expect(byQueue.get("qdead")).toBeNull();
  });

  it("dead jobs per queue and the oldest unowned one, from the failure groups", async () => {
    const byQueue = new Map((await deadByQueue(db.pool)).map((r) => [r.queue_id, r]));
    expect(byQueue.get("qdead")!.dead).toBe(2);
    expect(byQueue.get("qdead")!.unowned_oldest_s).toBeGreaterThanOrEqual(0);
    expect(byQueue.get("qa")).toEqual({ queue_id: "qa", dead: 0, unowned_oldest_s: null });
    await db.pool.query(`UPDATE dlq_groups SET status = 'investigating'`);
    await db.pool.query(
      `INSERT INTO users (id, email, name, password_hash, role) VALUES ('u1', 'u1@example.com', 'U', 'x', 'operator') ON CONFLICT DO NOTHING`,
    );
    await db.pool.query(`UPDATE dlq_groups SET owner_id = 'u1'`);
    const owned = new Map((await deadByQueue(db.pool)).map((r) => [r.queue_id, r]));
    expect(owned.get("qdead")).toEqual({ queue_id: "qdead", dead: 2, unowned_oldest_s: null });
  });

  it("workers per pool and state, zeros included", async () => {
    await db.pool.query(
      `INSERT INTO workers (id, pool_id, host, pid, version, concurrency, draining, heartbeat_at, stopped_at) VALUES
         ('w-live', 'pa', 'h', 1, 'v', 1, false, now(), NULL),
         ('w-drain', 'pa', 'h', 2, 'v', 1, true, now(), NULL),
         ('w-lost', 'pa', 'h', 3, 'v', 1, false, now() - interval '1 hour', NULL),
         ('w-stopped', 'pa', 'h', 4, 'v', 1, false, now() - interval '1 hour', now())`,
    );
    const rows = await workersByState(db.pool);
    expect(rows.filter((r) => r.pool_id === "pa").map((r) => [r.state, r.count])).toEqual([
      ["draining", 1],
      ["live", 1],
      ["lost", 1],
    ]);
    expect(rows.filter((r) => r.pool_id === "pb").every((r) => r.count === 0)).toBe(true);
  });

  it("oldest ready is index probes at a 50k backlog: no Seq Scan of jobs", async () => {
    await db.pool.query(
      `INSERT INTO jobs (job_id, job_type, queue_id, tenant_id, payload, priority, idempotency_key, state, max_attempts, timeout_s, run_at, trace_id)
       SELECT gen_random_uuid(), 'qa.job', 'qa', CASE WHEN i % 2 = 0 THEN 'tenant_A' ELSE 'tenant_B' END, '{}', 50, 'bulk' || i, 'READY', 5, 300,
              now() - make_interval(secs => i % 1000), 'trace'
         FROM generate_series(1, 50000) i`,
    );
    await db.pool.query("ANALYZE jobs");
    const { rows } = await db.pool.query<{ "QUERY PLAN": string }>(`EXPLAIN (ANALYZE, BUFFERS) ${OLDEST_READY_SQL}`);
    const plan = rows.map((r) => r["QUERY PLAN"]).join("\n");
    expect(plan).not.toMatch(/Seq Scan on jobs/);
    expect(plan).toMatch(/Index (Only )?Scan using jobs_aging_idx on jobs/);
    expect(plan).toMatch(/Index (Only )?Scan using jobs_claim_idx on jobs/);
    const total = Number(/Execution Time: ([\d.]+) ms/.exec(plan)![1]);
    expect(total).toBeLessThan(200);
    process.stdout.write(`oldest-ready plan at a 50k backlog:\n${plan}\n`);
  });
});
