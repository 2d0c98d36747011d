import { ZSafeFailure } from "@porter/contracts";
import { useTestDatabase } from "@porter/db/testing/test-database";
import { beforeAll, describe, expect, it } from "vitest";
import { cancelJob } from "../sql/cancel-job";
import { claimJobs } from "../sql/claim-jobs";
import { enqueueJobs } from "../sql/enqueue-jobs";
import { failJobs } from "../sql/fail-jobs";
import { controlPlane } from "../testing/control-plane-factory";
import { killJobs } from "../testing/dead-jobs";
import { tenantJob, tenantRecentJobs } from "./tenant-jobs";

// The tenant status page's reads: one tenant, the link's job types, tenant-safe fields only.
const db = useTestDatabase();
const A = "tenant_A";
let n = 0;
const enqueue = async (jobType: string, tenantId = A) => {
  const [r] = await enqueueJobs(db.pool, [{ job_type: jobType, tenant_id: tenantId, payload: { secret: "payload-secret" }, idempotency_key: `k${++n}` }], {
    notify: false,
  });
  return r!.job_id;
};
const RAW = "connect ECONNREFUSED postgres://app:hunter2@db.prod.internal:5432/x at /srv/app/db.js:1:2";

let deadId = "";
let otherTenantId = "";
let otherTypeId = "";
let retryId = "";
const aIds: string[] = [];

beforeAll(async () => {
  await controlPlane(db.pool, {
    pool: "tp",
    queues: [{ id: "ta" }, { id: "tb" }],
    jobTypes: [
      { id: "ta.email", queue: "ta" },
      { id: "tb.report", queue: "tb" },
    ],
  });
  deadId = (await killJobs(db.pool, 1, { jobType: "ta.email", tenantId: A, code: "UPSTREAM_DOWN", message: RAW }, "tp"))[0]!;
  aIds.push(deadId);
  // A job that failed once and waits for its retry.
  retryId = await enqueue("ta.email");
  const [c] = await claimJobs(db.pool, { poolId: "tp", workerId: "worker-host-7", limit: 1 });
  await failJobs(db.pool, [
    {
      id: c!.id,
      leaseToken: c!.leaseToken,
      attempt: c!.attempt,
      outcome: "failed",
      error: { code: "lowercase bad", class: "retryable", message: RAW, worker_version: "w", attempt: 1, trace_id: "t", last_checkpoint: null },
      next: { state: "RETRY_WAIT", runAt: new Date(Date.now() + 3_600_000) },
    },
  ]);
  aIds.push(retryId);
  for (let i = 0; i < 5; i++) aIds.push(await enqueue("ta.email"));
  const cancelled = await enqueue("ta.email");
  await cancelJob(db.pool, { jobId: cancelled, actor: "operator@corp.example", reason: "internal note" });
  aIds.push(cancelled);
  otherTypeId = await enqueue("tb.report");
  otherTenantId = await enqueue("ta.email", "tenant_B");
});

describe("tenantRecentJobs", () => {
  it("pages the tenant's jobs in scope, newest first, stable across pages and tables", async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page = await tenantRecentJobs(db.pool, { tenantId: A, jobTypes: ["ta.email"], cursor, limit: 3 });
      expect(page.jobs.length).toBeLessThanOrEqual(3);
      seen.push(...page.jobs.map((j) => j.job_id));
      cursor = page.next_cursor;
      pages++;
    } while (cursor && pages < 10);
    expect(seen).toEqual([...aIds].sort().reverse());
    expect(seen).not.toContain(otherTenantId);
    expect(seen).not.toContain(otherTypeId);
    expect(pages).toBe(3);
  });

  it("filters by state and by job type; a type outside the link's scope gives nothing", async () => {
    const dead = await tenantRecentJobs(db.pool, { tenantId: A, jobTypes: [], state: "DEAD" });
    expect(dead.jobs.map((j) => j.job_id)).toEqual([deadId]);
    const reports = await tenantRecentJobs(db.pool, { tenantId: A, jobTypes: [], jobType: "tb.report" });
    expect(reports.jobs.map((j) => j.job_id)).toEqual([otherTypeId]);
    expect((await tenantRecentJobs(db.pool, { tenantId: A, jobTypes: ["ta.email"], jobType: "tb.report" })).jobs).toEqual([]);
  });

  it("shows only tenant-safe fields: the safe failure, never the raw error or payload", async () => {
    const page = await tenantRecentJobs(db.pool, { tenantId: A, jobTypes: [] });
    const json = JSON.stringify(page);
    for (const secret of ["hunter2", "db.prod.internal", "/srv/app", "payload-secret", "worker-host-7", "operator@corp", "internal note"])
      expect(json).not.toContain(secret);
    const dead = page.jobs.find((j) => j.job_id === deadId)!;
    expect(ZSafeFailure.parse(dead.failure)).toEqual({ code: "UPSTREAM_DOWN", class: "retryable", message: "connect ECONNREFUSED <url> at <path>" });
    const retry = page.jobs.find((j) => j.job_id === retryId)!;
    expect(retry).toMatchObject({ state: "RETRY_WAIT", failure: { code: null } });
    expect(retry.next_attempt_at).not.toBeNull();
  });
});

describe("tenantJob", () => {
  it("is null for another tenant's job, a type outside the scope, an unknown or malformed id", async () => {
    expect(await tenantJob(db.pool, { tenantId: A, jobTypes: [], jobId: otherTenantId })).toBeNull();
    expect(await tenantJob(db.pool, { tenantId: A, jobTypes: ["ta.email"], jobId: otherTypeId })).toBeNull();
    expect(await tenantJob(db.pool, { tenantId: A, jobTypes: [], jobId: "0190aaaa-0000-7000-8000-000000000000" })).toBeNull();
    expect(await tenantJob(db.pool, { tenantId: A, jobTypes: [], jobId: "not-a-uuid" })).toBeNull();
    expect(await tenantJob(db.pool, { tenantId: A, jobTypes: ["tb.report"], jobId: otherTypeId })).not.toBeNull();
  });

  it("gives a tenant-safe timeline: created, started, failed with the safe failure, retry wait", async () => {
    const job = await tenantJob(db.pool, { tenantId: A, jobTypes: ["ta.email"], jobId: retryId });
    expect(job?.timeline.map((e) => e.kind)).toEqual(["created", "started", "failed", "retry_wait"]);
    expect(job?.timeline[2]?.failure?.message).toBe("connect ECONNREFUSED <url> at <path>");
    expect(job?.timeline[3]?.until).toBe(job?.next_attempt_at);
    const json = JSON.stringify(job);
    for (const secret of ["hunter2", "worker-host-7", "payload-secret"]) expect(json).not.toContain(secret);
  });

  it("ends a dead job's timeline with DEAD (its failure said once) and a cancelled one with CANCELLED (no actor, no note)", async () => {
    const dead = await tenantJob(db.pool, { tenantId: A, jobTypes: [], jobId: deadId });
    expect(dead?.timeline.map((e) => e.kind)).toEqual(["created", "started", "failed", "DEAD"]);
    expect(dead?.timeline.filter((e) => e.failure)).toHaveLength(1);
    const cancelledId = aIds.at(-1)!;
    const cancelled = await tenantJob(db.pool, { tenantId: A, jobTypes: [], jobId: cancelledId });
    expect(cancelled?.state).toBe("CANCELLED");
    expect(cancelled?.timeline.at(-1)?.kind).toBe("CANCELLED");
    expect(JSON.stringify(cancelled)).not.toMatch(/operator@|internal note/);
  });
});
