import { enqueueJobs } from "@porter/core";
import { controlPlane } from "@porter/core/testing/control-plane-factory";
import { useTestDatabase } from "@porter/db/testing/test-database";
import { beforeAll, describe, expect, it } from "vitest";
import { consoleCaller, sessionOf } from "./testing/console";

// overview.signals and overview.series as the overview and the queue page read them: queues at
// risk first, then growing, then the rest; one queue with its tenants and job types; the series'
// steps; an unknown queue is a 404 and an unknown window a 400.
const db = useTestDatabase();
const viewer = () => consoleCaller(db.pool, sessionOf("viewer"));

/** Flow as the writers add it: a minute row two minutes ago. */
const flow = async (queueId: string, tenantId: string, row: { arrivals: number; starts: number; succeeded: number; runMs: number }) => {
  await db.pool.query(
    `INSERT INTO flow_rollups (grain, at, queue_id, job_type, tenant_id, shard, arrivals, starts, succeeded, runs, run_ms_sum)
     VALUES (1, date_trunc('minute', now() - interval '2 minutes'), $1, $1 || '.job', $2, 3, $3, $4, $5::bigint, $5::bigint, $5::bigint * $6::float8)`,
    [queueId, tenantId, row.arrivals, row.starts, row.succeeded, row.runMs],
  );
};

beforeAll(async () => {
  await controlPlane(db.pool, {
    pool: { id: "p1", worker_concurrency: 10 },
    queues: [{ id: "a-ok" }, { id: "b-grow" }, { id: "c-risk", target_wait_s: 60 }],
    tenants: [{ id: "tenant_A" }, { id: "tenant_B" }],
  });
  await db.pool.query(`INSERT INTO workers (id, pool_id, host, pid, version, concurrency, heartbeat_at) VALUES ('w1', 'p1', 'h', 1, 't', 10, now())`);
  const jobs = (type: string, tenant: string, n: number) =>
    Array.from({ length: n }, (_, i) => ({ job_type: type, tenant_id: tenant, payload: { i }, idempotency_key: `${type}-${tenant}-${i}` }));
  const past = new Date(Date.now() - 300_000);
  await enqueueJobs(db.pool, [...jobs("c-risk.job", "tenant_A", 60), ...jobs("c-risk.job", "tenant_B", 40)], { now: past });
  await enqueueJobs(db.pool, jobs("b-grow.job", "tenant_A", 5), { now: past });
  // c-risk: 100 ready × 20 s ÷ 10 = 200 s of backlog against a 60 s target. b-grow: arrivals above completions, no target.
  await flow("c-risk", "tenant_A", { arrivals: 300, starts: 150, succeeded: 150, runMs: 20_000 });
  await flow("c-risk", "tenant_B", { arrivals: 100, starts: 50, succeeded: 50, runMs: 20_000 });
  await flow("b-grow", "tenant_A", { arrivals: 40, starts: 20, succeeded: 20, runMs: 100 });
});

describe("overview.signals", () => {
  it("at-risk queues first, then growing ones, then the rest; tenants and job types only for one queue", async () => {
    const s = await viewer().overview.signals({});
    expect(s.queues.map((q) => [q.queue_id, q.status])).toEqual([
      ["c-risk", "at_risk"],
      ["b-grow", "growing"],
      ["a-ok", "ok"],
    ]);
    const [risk] = s.queues;
    expect(risk).toMatchObject({ ready: 100, target_wait_s: 60, effective_concurrency: 10, backlog_s: 200, is_at_risk: true, has_no_concurrency: false });
    expect(risk!.projected_wait_s).toBeGreaterThan(60);
    expect(risk!.by_tenant).toEqual([]);

    const one = await viewer().overview.signals({ queue_id: "c-risk" });
    expect(one.queues).toHaveLength(1);
    expect(one.queues[0]!.by_tenant.map((t) => [t.tenant_id, t.starts, t.arrivals])).toEqual([
      ["tenant_A", 150, 360],
      ["tenant_B", 50, 140],
    ]);
    expect(one.queues[0]!.by_job_type.map((t) => [t.job_type, t.starts])).toEqual([["c-risk.job", 200]]);
    expect(one.queues[0]!.by_tenant[0]!.mean_run_s).toBe(20);
  });

  it("an unknown queue is NOT_FOUND", async () => {
    await expect(viewer().overview.signals({ queue_id: "no-such-queue" })).rejects.toMatchObject({ code: "NOT_FOUND" });
  });
});

describe("overview.series", () => {
  it("every step of the window, the flow of the scope, gauges per queue only", async () => {
    const s = await viewer().overview.series({ window: "1h" });
    expect(s).toMatchObject({ window: "1h", step_s: 60, has_gauges: true });
    expect(s.points).toHaveLength(60);
    expect(s.points.reduce((n, p) => n + p.arrivals, 0)).toBe(300 + 100 + 40 + 105);
    const risk = await viewer().overview.series({ window: "15m", queue_id: "c-risk" });
    expect(risk.points).toHaveLength(15);
    expect(risk.points.reduce((n, p) => n + p.succeeded, 0)).toBe(200);
    const tenant = await viewer().overview.series({ window: "6h", tenant_id: "tenant_B" });
    expect(tenant).toMatchObject({ step_s: 300, has_gauges: false });
    expect(tenant.points).toHaveLength(72);
    expect(tenant.points.reduce((n, p) => n + p.arrivals, 0)).toBe(140);
  });

  it("an unknown window is BAD_REQUEST", async () => {
    for (const window of ["2h", "constructor", "", "7D"]) {
      await expect(viewer().overview.series({ window } as never)).rejects.toMatchObject({ code: "BAD_REQUEST" });
    }
  });
});
