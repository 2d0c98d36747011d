// Tenant usage and a worker's running jobs and attempts on a real policy: tenants of weight 1 and 2
// in one pool, a quota on the first, a resource key with a concurrency limit — claimed by the real
// claim, failed (a 429) and acked by the real paths, so the rollups are the ones the paths write.
import type { TJobError } from "@porter/contracts";
import { useTestDatabase } from "@porter/db/testing/test-database";
import { beforeAll, describe, expect, it } from "vitest";
import { weightShare } from "../policy/fair-share";
import { type ClaimedJob, claimJobs } from "../sql/claim-jobs";
import { completeJobs } from "../sql/complete-jobs";
import { enqueueJobs } from "../sql/enqueue-jobs";
import { failJobs } from "../sql/fail-jobs";
import { reportThrottle } from "../sql/throttle";
import { registerWorker } from "../sql/workers";
import { controlPlane } from "../testing/control-plane-factory";
import { readTenantUsage } from "./tenant-usage";
import { listWorkerAttempts, listWorkerRunningJobs } from "./worker-jobs";

const db = useTestDatabase();
const rateLimited: TJobError = {
  code: "RATE_LIMITED",
  class: "retryable",
  message: "429 from the provider",
  worker_version: "test",
  attempt: 1,
  trace_id: "t",
  last_checkpoint: null,
};
let claimed: ClaimedJob[] = [];
let claimStartedAt = 0;

beforeAll(async () => {
  await controlPlane(db.pool, {
    pool: "p1",
    resourceKeys: [{ id: "provider", concurrency_limit: 6, rate_per_second: 5, burst: 10 }],
    queues: [{ id: "q1", resource_key_id: "provider", lease_seconds: 30 }, { id: "q2" }],
    tenants: [{ id: "tenant_A", weight: 1, max_running: 2 }, { id: "tenant_B", weight: 2 }, { id: "tenant_C" }],
  });
  await registerWorker(db.pool, { id: "w1", poolId: "p1", host: "host-1", pid: 11, version: "1.0.0", concurrency: 8 });
  const jobs = (tenant: string, n: number) =>
    Array.from({ length: n }, (_, i) => ({ job_type: "q1.job", tenant_id: tenant, payload: { i }, idempotency_key: `${tenant}-${i}` }));
  await enqueueJobs(db.pool, jobs("tenant_A", 10));
  await enqueueJobs(db.pool, jobs("tenant_B", 10));
  claimStartedAt = Date.now();
  // Virtual finish times: A's k-th job at k, B's at k/2 → B, A, B, B, A, B, … A stops at its quota (2).
  claimed = await claimJobs(db.pool, { poolId: "p1", workerId: "w1", limit: 6 });
  // The resource key is full (6 of 6): a second claim takes nothing.
  expect(await claimJobs(db.pool, { poolId: "p1", workerId: "w1", limit: 6 })).toEqual([]);
  const a = claimed.find((c) => c.tenantId === "tenant_A")!;
  const b = claimed.find((c) => c.tenantId === "tenant_B")!;
  // One of A's attempts hits a 429 (a retry in an hour: not claimable now), the provider is throttled; one of B's succeeds.
  await failJobs(db.pool, [
    {
      id: a.id,
      leaseToken: a.leaseToken,
      attempt: 1,
      outcome: "failed",
      error: rateLimited,
      next: { state: "RETRY_WAIT", runAt: new Date(Date.now() + 3_600_000) },
    },
  ]);
  await reportThrottle(db.pool, { resourceKeyId: "provider", retryAfterMs: 60_000 });
  await completeJobs(db.pool, [{ id: b.id, leaseToken: b.leaseToken, attempt: 1, result: { ok: true } }]);
});

describe("tenant usage", () => {
  it("claims as the policy says: 2 of tenant A (its quota), 4 of tenant B", () => {
    expect(claimed.filter((c) => c.tenantId === "tenant_A")).toHaveLength(2);
    expect(claimed.filter((c) => c.tenantId === "tenant_B")).toHaveLength(4);
  });

  it("tenant A: share of the pool against its weight share, quota, throttling, the resource key", async () => {
    const u = await readTenantUsage(db.pool, { tenantId: "tenant_A", windowS: 300 });
    expect(u).toMatchObject({ tenant_id: "tenant_A", window_s: 300, weight: 1, running: 1, max_running: 2, throttled_keys: ["provider"] });
    expect(u!.throttle_per_s).toBeCloseTo(1 / 300, 9);
    expect(u!.pools).toEqual([
      {
        pool_id: "p1",
        running: 1,
        pool_running: 4,
        running_share: 0.25,
        starts: 2,
        pool_starts: 6,
        start_share: 2 / 6,
        is_active: true,
        active_tenants: 2,
        active_weight: 3,
        weight_share: 1 / 3,
      },
    ]);
    expect(u!.resource_keys).toHaveLength(1);
    expect(u!.resource_keys[0]).toMatchObject({ id: "provider", in_use: 4, tenant_in_use: 1, limit: 3, rate_limit: 5, is_throttled: true });
    expect(u!.resource_keys[0]!.rate_per_s).toBeCloseTo(6 / 300, 9);
    expect(u!.resource_keys[0]!.tenant_rate_per_s).toBeCloseTo(2 / 300, 9);
  });

  it("tenant B: weight 2 of 3, no quota", async () => {
    const u = await readTenantUsage(db.pool, { tenantId: "tenant_B", windowS: 300 });
    expect(u).toMatchObject({ weight: 2, running: 3, max_running: null, throttle_per_s: 0 });
    expect(u!.pools[0]).toMatchObject({ running: 3, pool_running: 4, running_share: 0.75, starts: 4, start_share: 4 / 6, weight_share: 2 / 3 });
    expect(u!.resource_keys[0]).toMatchObject({ in_use: 4, tenant_in_use: 3, limit: 3 });
  });

  it("a tenant with no work has no pools; an unknown tenant is null", async () => {
    expect(await readTenantUsage(db.pool, { tenantId: "tenant_C" })).toMatchObject({ running: 0, pools: [], resource_keys: [], throttled_keys: [] });
    expect(await readTenantUsage(db.pool, { tenantId: "nobody" })).toBeNull();
  });

  it("weight share: among active tenants only, each once", () => {
    const active = [
      { tenantId: "a", weight: 1 },
      { tenantId: "b", weight: 2 },
      { tenantId: "b", weight: 2 },
    ];
    expect(weightShare("a", active)).toBeCloseTo(1 / 3, 12);
    expect(weightShare("c", active)).toBeNull();
  });
});

describe("a worker's running jobs and attempts", () => {
  it("lists the jobs it holds with tenant, attempt, claim age and lease left", async () => {
    const elapsed = Date.now() - claimStartedAt;
    const jobs = await listWorkerRunningJobs(db.pool, { workerIds: ["w1", "w-none"] });
    expect(jobs).toHaveLength(4);
    expect(jobs.filter((j) => j.tenant_id === "tenant_A")).toHaveLength(1);
    for (const j of jobs) {
      expect(j).toMatchObject({ worker_id: "w1", queue_id: "q1", job_type: "q1.job", attempt: 1 });
      expect(j.claimed_ms_ago).toBeLessThanOrEqual(elapsed + 1_000);
      expect(j.lease_expires_in_ms).toBeGreaterThan(30_000 - elapsed - 1_000);
      expect(j.lease_expires_in_ms).toBeLessThanOrEqual(30_000);
    }
    const running = claimed.filter((c) => jobs.some((j) => j.job_id === c.jobId)).map((c) => c.jobId);
    expect(running).toHaveLength(4);
    expect(await listWorkerRunningJobs(db.pool, { workerIds: ["w-none"] })).toEqual([]);
  });

  it("pages its ended attempts newest first: the success, then the 429", async () => {
    const first = await listWorkerAttempts(db.pool, { workerId: "w1", limit: 1 });
    expect(first.attempts).toHaveLength(1);
    expect(first.attempts[0]).toMatchObject({ tenant_id: "tenant_B", outcome: "succeeded", attempt: 1 });
    expect(first.next_cursor).not.toBeNull();
    const second = await listWorkerAttempts(db.pool, { workerId: "w1", limit: 1, cursor: first.next_cursor });
    expect(second.attempts).toHaveLength(1);
    expect(second.attempts[0]).toMatchObject({ tenant_id: "tenant_A", outcome: "failed", error_code: "RATE_LIMITED" });
    expect(second.next_cursor).toBeNull();
    expect((await listWorkerAttempts(db.pool, { workerId: "w1" })).attempts.map((a) => a.outcome)).toEqual(["succeeded", "failed"]);
    expect((await listWorkerAttempts(db.pool, { workerId: "w-none" })).attempts).toEqual([]);
  });
});
