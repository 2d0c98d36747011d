import { claimJobs, enqueueJobs, registerWorker } from "@porter/core";
import { controlPlane } from "@porter/core/testing/control-plane-factory";
import { useTestDatabase } from "@porter/db/testing/test-database";
import { TRPCError } from "@trpc/server";
import { beforeAll, describe, expect, it } from "vitest";
import { consoleCaller, sessionOf } from "./testing/console";

// tenants.usage and pools.workers.* through the router (issue 14): outputs pass their zod schemas,
// unknown tenants and workers are a NOT_FOUND.
const db = useTestDatabase();
const viewer = () => consoleCaller(db.pool, sessionOf("viewer"));
const codeOf = (p: Promise<unknown>) =>
  p.then(
    () => "OK",
    (e: unknown) => (e instanceof TRPCError ? e.code : String(e)),
  );

beforeAll(async () => {
  await controlPlane(db.pool, { pool: "cu-pool", queues: [{ id: "cu-q" }], tenants: [{ id: "tenant_A", weight: 3 }] });
  await registerWorker(db.pool, { id: "cu-w1", poolId: "cu-pool", host: "h1", pid: 7, version: "9.9.9", concurrency: 4 });
  await enqueueJobs(
    db.pool,
    Array.from({ length: 3 }, (_, i) => ({ job_type: "cu-q.job", tenant_id: "tenant_A", payload: {}, idempotency_key: `cu-${i}` })),
  );
  await claimJobs(db.pool, { poolId: "cu-pool", workerId: "cu-w1", limit: 2 });
});

describe("tenants.usage", () => {
  it("reads a tenant's usage; an unknown tenant is NOT_FOUND", async () => {
    const u = await viewer().tenants.usage({ tenant_id: "tenant_A" });
    expect(u).toMatchObject({ weight: 3, running: 2, max_running: null, window_s: 300 });
    expect(u.pools).toMatchObject([{ pool_id: "cu-pool", running: 2, pool_running: 2, running_share: 1, starts: 2, weight_share: 1, active_tenants: 1 }]);
    expect(await codeOf(viewer().tenants.usage({ tenant_id: "tenant_nobody" }))).toBe("NOT_FOUND");
  });
});

describe("pools.workers", () => {
  it("running, get and attempts; an unknown worker is NOT_FOUND", async () => {
    const running = await viewer().pools.workers.running({ pool_id: "cu-pool" });
    expect(running.map((j) => [j.worker_id, j.tenant_id, j.queue_id, j.attempt])).toEqual([
      ["cu-w1", "tenant_A", "cu-q", 1],
      ["cu-w1", "tenant_A", "cu-q", 1],
    ]);
    const w = await viewer().pools.workers.get({ id: "cu-w1" });
    expect(w).toMatchObject({ id: "cu-w1", pool_id: "cu-pool", host: "h1", pid: 7, version: "9.9.9", concurrency: 4, status: "live" });
    expect(w.jobs).toHaveLength(2);
    expect(await viewer().pools.workers.attempts({ id: "cu-w1" })).toEqual({ attempts: [], next_cursor: null });
    expect(await codeOf(viewer().pools.workers.get({ id: "cu-nobody" }))).toBe("NOT_FOUND");
    expect(await codeOf(viewer().pools.workers.attempts({ id: "cu-nobody" }))).toBe("NOT_FOUND");
  });
});
