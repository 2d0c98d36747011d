import { claimJobs, completeJobs, enqueueJobs } from "@porter/core";
import { useTestDatabase } from "@porter/db/testing/test-database";
import { describe, expect, it } from "vitest";
import { seedDemo } from "../seed/demo";
import { runPorter } from "./run-porter";

const db = useTestDatabase();

// `porter stats` as a user runs it: a subprocess on the test database, as the runtime role.
const porter = (...args: string[]) => {
  const { PORTER_ADMIN_PASSWORD: _p, PORTER_ADMIN_EMAIL: _e, PORTER_APP_DATABASE_URL: _a, PORTER_APP_PASSWORD: _ap, ...env } = process.env;
  return runPorter(args, { env: { ...env, DATABASE_URL: db.connectionString } });
};

describe("porter stats", () => {
  it("prints the derived signals per queue and pool: --json shape, the table, --queue, bad --window", async () => {
    await seedDemo(db.prisma, { actor: "seed", adminEmail: "admin@porter.local" });
    await db.pool.query("UPDATE queues SET target_wait_s = 1 WHERE id = 'diag'");
    const jobs = Array.from({ length: 5 }, (_, i) => ({ job_type: "diag.sleep", tenant_id: "tenant_A", payload: { ms: 1 }, idempotency_key: `stats-${i}` }));
    await enqueueJobs(db.pool, jobs, { now: new Date(Date.now() - 120_000) });
    const claimed = await claimJobs(db.pool, { poolId: "background", workerId: "w", limit: 2 });
    await completeJobs(
      db.pool,
      claimed.map((c) => ({ id: c.id, leaseToken: c.leaseToken, attempt: c.attempt, result: null })),
    );

    const run = await porter("stats", "--queue", "diag", "--window", "15m", "--json");
    expect(run.code, run.stderr).toBe(0);
    const out = run.json as { at: string; window_s: number; queues: Array<Record<string, unknown>>; pools: Array<Record<string, unknown>> };
    expect(out.window_s).toBe(900);
    expect(out.queues).toHaveLength(1);
    const q = out.queues[0]!;
    expect(Object.keys(q).sort()).toEqual(
      [
        "arrival_per_s",
        "arrival_to_completion",
        "arrivals",
        "backlog_s",
        "by_job_type",
        "by_tenant",
        "cancelled",
        "completion_per_s",
        "completions",
        "dead",
        "dlq",
        "drain_s",
        "effective_concurrency",
        "expired",
        "is_at_risk",
        "is_growing",
        "is_ready_lower_bound",
        "lease_expiry_per_s",
        "mean_run_s",
        "oldest_claimable_age_s",
        "paused",
        "pool_id",
        "projected_wait_s",
        "queue_id",
        "ready",
        "retries_by_code",
        "retry_per_s",
        "run_ms",
        "running",
        "starts",
        "succeeded",
        "target_wait_s",
        "throttle_per_s",
        "wait_ms",
      ].sort(),
    );
    expect(q).toMatchObject({ queue_id: "diag", pool_id: "background", arrivals: 5, succeeded: 2, ready: 3, target_wait_s: 1 });
    expect(q.oldest_claimable_age_s as number).toBeGreaterThan(100);
    expect(q.wait_ms).toEqual({ p50: expect.any(Number), p95: expect.any(Number), p99: expect.any(Number) });
    expect(q.dlq).toEqual({ count: 0, oldest_age_s: null, unowned: 0 });
    expect(out.pools).toEqual([{ pool_id: "background", live_workers: 0, worker_concurrency: expect.any(Number), desired_workers: 1, throttled_keys: [] }]);

    const table = await porter("stats", "--queue", "diag");
    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout).toMatch(/queue\s+status\s+ready/);
    expect(table.stdout).toMatch(/diag\s+AT RISK\s+3\s/); // no live worker: ready work and no concurrency
    expect(table.stdout).toMatch(/background\s+0\s+1\s/);

    const bad = await porter("stats", "--window", "15x");
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("--window must be like 15m");
  });
});
