// The monotonic flow counters (reads/flow-counters.ts, sql/flow-totals.ts) against a workload
// recorded by the core job paths: exact values, then unchanged across the hour fold, a refold of
// the last hour and pruning at 91 days, and grown by exactly the work that came after.
import type { TJobError } from "@porter/contracts";
import { useTestDatabase } from "@porter/db/testing/test-database";
import { beforeAll, describe, expect, it } from "vitest";
import { cancelJob } from "../sql/cancel-job";
import { claimJobs } from "../sql/claim-jobs";
import { completeJobs } from "../sql/complete-jobs";
import { enqueueJobs } from "../sql/enqueue-jobs";
import { failJobs } from "../sql/fail-jobs";
import { foldFlowHours, pruneFlow } from "../sql/flow-fold";
import { absorbFlowTotals } from "../sql/flow-totals";
import { rescueExpiredLeases } from "../sql/rescue-expired-leases";
import { controlPlane } from "../testing/control-plane-factory";
import { addFlow, emptyFlow, readFlow } from "./flow";
import { type FlowCounters, readFlowCounters } from "./flow-counters";

const db = useTestDatabase();
const error = (code: string, permanent: boolean): TJobError => ({
  code,
  class: permanent ? "permanent" : "retryable",
  message: code.toLowerCase(),
  worker_version: "test",
  attempt: 1,
  trace_id: "0af7651916cd43dd8448eb211c80319c",
  last_checkpoint: null,
});

/** Every series of the counters as "name{labels}" → value, for comparisons across phases. */
const series = (c: FlowCounters): Map<string, number> => {
  const out = new Map<string, number>();
  for (const r of c.byJobType) {
    for (const [k, v] of Object.entries(r)) if (typeof v === "number") out.set(`${k}{${r.queueId},${r.jobType}}`, v);
  }
  for (const h of c.histograms) {
    for (const [b, n] of h.buckets.entries()) out.set(`hist_${h.kind}{${h.queueId},${b}}`, n);
  }
  for (const r of c.retriesByCode) out.set(`retries{${r.queueId},${r.code}}`, r.n);
  return out;
};

/** No series of `after` is below (or missing from) `before`. */
const expectNeverLower = (before: FlowCounters, after: FlowCounters) => {
  const a = series(after);
  const lower = [...series(before)].filter(([k, v]) => !((a.get(k) ?? Number.NEGATIVE_INFINITY) >= v));
  expect(lower).toEqual([]);
};

let recorded: FlowCounters;

beforeAll(async () => {
  await controlPlane(db.pool, {
    queues: [
      { id: "q1", lease_seconds: 30, backoff_base_ms: 1, backoff_cap_ms: 1 },
      { id: "q2", lease_seconds: 30 },
    ],
  });
  const jobs = (type: string, n: number) =>
    Array.from({ length: n }, (_, i) => ({ job_type: type, tenant_id: "tenant_A", payload: { i }, idempotency_key: `${type}-${i}` }));
  await enqueueJobs(db.pool, jobs("q1.job", 10), { notify: false });
  const claimed = await claimJobs(db.pool, { poolId: "p1", workerId: "w1", limit: 10 });
  const q1 = claimed.filter((c) => c.jobType === "q1.job");
  expect(q1).toHaveLength(10);
  const ref = (c: (typeof q1)[number]) => ({ id: c.id, leaseToken: c.leaseToken, attempt: c.attempt });
  // q1: 6 succeed, 2 fail with BOOM and retry, 1 dies with FATAL, 1 is left running (its lease expires).
  await completeJobs(
    db.pool,
    q1.slice(0, 6).map((c) => ({ ...ref(c), result: null })),
  );
  await failJobs(db.pool, [
    ...q1
      .slice(6, 8)
      .map((c) => ({ ...ref(c), outcome: "failed" as const, error: error("BOOM", false), next: { state: "RETRY_WAIT" as const, runAt: new Date() } })),
    { ...ref(q1[8]!), outcome: "failed", error: error("FATAL", true), next: { state: "DEAD" } },
  ]);
  const retried = await claimJobs(db.pool, { poolId: "p1", workerId: "w1", limit: 10, now: new Date(Date.now() + 1_000) });
  expect(retried.filter((c) => c.jobType === "q1.job").map((c) => c.attempt)).toEqual([2, 2]);
  await completeJobs(
    db.pool,
    retried.filter((c) => c.jobType === "q1.job").map((c) => ({ ...ref(c), result: null })),
  );
  expect((await rescueExpiredLeases(db.pool, { now: new Date(Date.now() + 31_000) })).requeued).toBe(1);
  // q2: one cancelled while waiting, three succeed.
  await enqueueJobs(db.pool, jobs("q2.job", 4), { notify: false });
  const q2Ready = await db.pool.query<{ id: string }>("SELECT job_id::text AS id FROM jobs WHERE queue_id = 'q2' AND state = 'READY' ORDER BY id LIMIT 1");
  await cancelJob(db.pool, { jobId: q2Ready.rows[0]!.id, actor: "test" });
  const q2All = (await claimJobs(db.pool, { poolId: "p1", workerId: "w1", limit: 10, now: new Date(Date.now() + 2_000) })).filter(
    (c) => c.jobType === "q2.job",
  );
  expect(q2All).toHaveLength(3);
  await completeJobs(
    db.pool,
    q2All.map((c) => ({ ...ref(c), result: null })),
  );
  recorded = await readFlowCounters(db.pool);
});

describe("flow counters", () => {
  it("count the recorded workload exactly, and their histograms and sums agree with the rollups", async () => {
    const q1 = recorded.byJobType.find((r) => r.jobType === "q1.job")!;
    const q2 = recorded.byJobType.find((r) => r.jobType === "q2.job")!;
    expect(q1).toMatchObject({ queueId: "q1", succeeded: 8, dead: 1, cancelled: 0, expired: 0, retried: 2, leaseExpiries: 1, starts: 12 });
    expect(q2).toMatchObject({ queueId: "q2", succeeded: 3, dead: 0, cancelled: 1, expired: 0, retried: 0, leaseExpiries: 0 });
    expect(recorded.retriesByCode).toEqual([{ queueId: "q1", code: "BOOM", n: 2 }]);
    const flow = (await readFlow(db.pool, { from: new Date(Date.now() - 3_600_000), to: new Date(Date.now() + 3_600_000), queueId: "q1" })).reduce(
      addFlow,
      emptyFlow(),
    );
    const hist = (kind: "w" | "r") => recorded.histograms.find((h) => h.queueId === "q1" && h.kind === kind)!.buckets;
    expect(hist("w")).toEqual(flow.waitHistogram);
    expect(hist("r")).toEqual(flow.runHistogram);
    expect(hist("w").reduce((s, n) => s + n, 0)).toBe(12);
    expect(hist("r").reduce((s, n) => s + n, 0)).toBe(flow.runs);
    expect(q1.runs).toBe(flow.runs);
    expect(q1.waitMsSum).toBeCloseTo(flow.waitMsSum, 6);
    expect(q1.runMsSum).toBeCloseTo(flow.runMsSum, 6);
  });

  it("stay monotonic across the hour fold, a refold of the last hour and pruning; grow by exactly the later work", async () => {
    const hour = Math.floor(Date.now() / 3_600_000) * 3_600_000;
    const nextHour = (m: number) => new Date(hour + 3_600_000 + m * 60_000);
    // The fold in the next hour (past the late window): the minutes go into the totals; same values.
    expect((await foldFlowHours(db.pool, { now: nextHour(10) })).hours).toBeGreaterThan(0);
    const { rows: marks } = await db.pool.query<{ absorbed_to: Date }>("SELECT absorbed_to FROM flow_totals_mark");
    expect(marks[0]!.absorbed_to).toEqual(nextHour(5));
    const folded = await readFlowCounters(db.pool);
    expect(folded).toEqual(recorded);

    // Refolds of the last hour (inside and past its late window) add nothing.
    await foldFlowHours(db.pool, { now: nextHour(2) });
    await foldFlowHours(db.pool, { now: nextHour(11) });
    expect(await absorbFlowTotals(db.pool, { now: nextHour(10) })).toEqual({ upserted: 0 });
    expect(await readFlowCounters(db.pool)).toEqual(recorded);

    // Later work (a minute after the mark, as a writer stamps it): counted once, now and after its absorb.
    await db.pool.query(
      `INSERT INTO flow_rollups (grain, at, queue_id, job_type, tenant_id, shard, succeeded, lease_expiries) VALUES (1, $1, 'q1', 'q1.job', 'tenant_A', 3, 5, 2)`,
      [nextHour(6)],
    );
    await db.pool.query(
      `INSERT INTO flow_histograms (grain, at, queue_id, job_type, tenant_id, shard, kind, bucket, n) VALUES (1, $1, 'q1', 'q1.job', 'tenant_A', 3, 'w', 4, 5)`,
      [nextHour(6)],
    );
    const later = await readFlowCounters(db.pool);
    expectNeverLower(folded, later);
    const q1 = (c: FlowCounters) => c.byJobType.find((r) => r.jobType === "q1.job")!;
    const w4 = (c: FlowCounters) => c.histograms.find((h) => h.queueId === "q1" && h.kind === "w")!.buckets[4]!;
    expect(q1(later).succeeded).toBe(8 + 5);
    expect(q1(later).leaseExpiries).toBe(1 + 2);
    expect(w4(later)).toBe(w4(folded) + 5);

    // Pruning at 91 days: hour rows and absorbed minutes go; the unabsorbed minute stays; same counters.
    const day91 = new Date(hour + 91 * 24 * 3_600_000);
    expect((await pruneFlow(db.pool, { now: day91 })).pruned).toBeGreaterThan(0);
    const { rows: left } = await db.pool.query<{ grain: number; at: Date }>("SELECT grain, at FROM flow_rollups ORDER BY grain, at");
    expect(left).toEqual([{ grain: 1, at: nextHour(6) }]);
    const pruned = await readFlowCounters(db.pool);
    expect(pruned).toEqual(later);

    // Maintenance at 91 days: the last minute is absorbed, pruned; still the same counters.
    await foldFlowHours(db.pool, { now: day91 });
    await pruneFlow(db.pool, { now: day91 });
    expect((await db.pool.query("SELECT 1 FROM flow_rollups UNION ALL SELECT 1 FROM flow_histograms UNION ALL SELECT 1 FROM flow_retry_codes")).rowCount).toBe(
      0,
    );
    expect(await readFlowCounters(db.pool)).toEqual(later);
  });

  it("two absorbs at once add each minute once (the mark row is locked)", async () => {
    const before = await readFlowCounters(db.pool);
    const at = new Date(Math.floor(Date.now() / 60_000) * 60_000 + 200 * 24 * 3_600_000);
    await db.pool.query(
      `INSERT INTO flow_rollups (grain, at, queue_id, job_type, tenant_id, shard, succeeded) VALUES (1, $1, 'q2', 'q2.job', 'tenant_A', 1, 7)`,
      [at],
    );
    const now = new Date(at.getTime() + 10 * 60_000);
    await Promise.all([absorbFlowTotals(db.pool, { now }), absorbFlowTotals(db.pool, { now }), absorbFlowTotals(db.pool, { now })]);
    const after = await readFlowCounters(db.pool);
    expect(after.byJobType.find((r) => r.jobType === "q2.job")!.succeeded).toBe(before.byJobType.find((r) => r.jobType === "q2.job")!.succeeded + 7);
  });
});
