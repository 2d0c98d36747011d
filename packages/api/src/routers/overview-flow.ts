// overview.series and overview.signals: the flow charts and the "needs attention" list of the
// overview, the queue page and the tenant page (issue 14, deliverable 3; docs/observability.md "Console").
import { AppError } from "@porter/contracts";
import { type FlowSeriesWindow, type FlowSignals, type QueueSignals, readFlowSeries, readSignals } from "@porter/core";
import { z } from "zod";
import { type FLOW_SERIES_WINDOW_NAMES, ZFlowSeriesInput, ZSignalsInput } from "../schemas/overview";
import { viewerReadProcedure } from "../trpc";

/** The contract's windows are core's, no more and no fewer (a compile-time check). */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const isSameWindows: Same<FlowSeriesWindow, (typeof FLOW_SERIES_WINDOW_NAMES)[number]> = true;
void isSameWindows;

const ZPercentiles = z.object({ p50: z.number().nullable(), p95: z.number().nullable(), p99: z.number().nullable() });

const ZFlowSeriesPoint = z.object({
  at: z.string(),
  arrivals: z.number().int(),
  starts: z.number().int(),
  succeeded: z.number().int(),
  dead: z.number().int(),
  cancelled: z.number().int(),
  expired: z.number().int(),
  retried: z.number().int(),
  throttles: z.number().int(),
  lease_expiries: z.number().int(),
  wait_ms: ZPercentiles,
  run_ms: ZPercentiles,
  ready: z.number().nullable(),
  running: z.number().nullable(),
  backlog_s: z.number().nullable(),
  oldest_claimable_age_s: z.number().nullable(),
});

const ZFlowSeries = z.object({
  window: ZFlowSeriesInput.shape.window,
  step_s: z.number().int(),
  from: z.string(),
  to: z.string(),
  has_gauges: z.boolean(),
  points: z.array(ZFlowSeriesPoint),
});

const ZFlowSignals = z.object({
  arrivals: z.number().int(),
  starts: z.number().int(),
  completions: z.number().int(),
  succeeded: z.number().int(),
  dead: z.number().int(),
  arrival_per_s: z.number(),
  completion_per_s: z.number(),
  arrival_to_completion: z.number().nullable(),
  mean_run_s: z.number().nullable(),
  wait_ms: ZPercentiles,
  run_ms: ZPercentiles,
});

const ZQueueSignals = ZFlowSignals.extend({
  queue_id: z.string(),
  pool_id: z.string(),
  paused: z.boolean(),
  target_wait_s: z.number().int().nullable(),
  ready: z.number().int(),
  is_ready_lower_bound: z.boolean(),
  running: z.number().int(),
  effective_concurrency: z.number(),
  oldest_claimable_age_s: z.number().nullable(),
  backlog_s: z.number().nullable(),
  drain_s: z.number().nullable(),
  is_growing: z.boolean(),
  /** Null when unknown; `has_no_concurrency` when ready work has no worker or cap to run on (an infinite wait). */
  projected_wait_s: z.number().nullable(),
  has_no_concurrency: z.boolean(),
  is_at_risk: z.boolean(),
  /** at_risk (projected wait > target), growing (arrivals ≥ completions with work ready), ok. */
  status: z.enum(["at_risk", "growing", "ok"]),
  dlq: z.object({ count: z.number().int(), oldest_age_s: z.number().nullable(), unowned: z.number().int() }),
  by_tenant: z.array(ZFlowSignals.extend({ tenant_id: z.string() })),
  by_job_type: z.array(ZFlowSignals.extend({ job_type: z.string() })),
});

const ZSignals = z.object({ at: z.string(), window_s: z.number().int(), queues: z.array(ZQueueSignals) });

const flowSignals = (f: FlowSignals): z.infer<typeof ZFlowSignals> => ({
  arrivals: f.arrivals,
  starts: f.starts,
  completions: f.completions,
  succeeded: f.succeeded,
  dead: f.dead,
  arrival_per_s: f.arrivalPerS,
  completion_per_s: f.completionPerS,
  arrival_to_completion: f.arrivalToCompletion,
  mean_run_s: f.meanRunS,
  wait_ms: f.waitMs,
  run_ms: f.runMs,
});

const finite = (n: number | null): number | null => (n === null || !Number.isFinite(n) ? null : n);
const RANK = { at_risk: 0, growing: 1, ok: 2 } as const;

/** The signals projection of one queue; tenants and job types only when asked for one queue. */
const queueSignals = (q: QueueSignals, isDetailed: boolean): z.infer<typeof ZQueueSignals> => ({
  ...flowSignals(q),
  queue_id: q.queueId,
  pool_id: q.poolId,
  paused: q.paused,
  target_wait_s: q.targetWaitS,
  ready: q.ready,
  is_ready_lower_bound: q.isReadyLowerBound,
  running: q.running,
  effective_concurrency: finite(q.effectiveConcurrency) ?? 0,
  oldest_claimable_age_s: q.oldestClaimableAgeS,
  backlog_s: finite(q.backlogS),
  drain_s: finite(q.drainS),
  is_growing: q.isGrowing,
  projected_wait_s: finite(q.projectedWaitS),
  has_no_concurrency: q.projectedWaitS === Number.POSITIVE_INFINITY,
  is_at_risk: q.isAtRisk,
  status: q.isAtRisk ? "at_risk" : q.isGrowing ? "growing" : "ok",
  dlq: { count: q.dlq.count, oldest_age_s: q.dlq.oldestAgeS, unowned: q.dlq.unowned },
  by_tenant: isDetailed ? q.byTenant.map((t) => ({ tenant_id: t.tenantId, ...flowSignals(t) })) : [],
  by_job_type: isDetailed ? q.byJobType.map((t) => ({ job_type: t.jobType, ...flowSignals(t) })) : [],
});

/** `overview.series`: the flow charts' points (core readFlowSeries). */
export const seriesProcedure = viewerReadProcedure
  .input(ZFlowSeriesInput)
  .output(ZFlowSeries)
  .query(async ({ ctx, input }) => {
    const s = await readFlowSeries(ctx.db, {
      window: input.window,
      ...(input.queue_id ? { queueId: input.queue_id } : {}),
      ...(input.tenant_id ? { tenantId: input.tenant_id } : {}),
      ...(input.job_type ? { jobType: input.job_type } : {}),
    });
    return {
      window: s.window,
      step_s: s.stepS,
      from: s.from.toISOString(),
      to: s.to.toISOString(),
      has_gauges: s.hasGauges,
      points: s.points.map((p) => ({
        at: p.at.toISOString(),
        arrivals: p.arrivals,
        starts: p.starts,
        succeeded: p.succeeded,
        dead: p.dead,
        cancelled: p.cancelled,
        expired: p.expired,
        retried: p.retried,
        throttles: p.throttles,
        lease_expiries: p.leaseExpiries,
        wait_ms: p.waitMs,
        run_ms: p.runMs,
        ready: p.ready,
        running: p.running,
        backlog_s: p.backlogS,
        oldest_claimable_age_s: p.oldestClaimableAgeS,
      })),
    };
  });

/**
 * `overview.signals`: every queue's signals (core readSignals), at-risk queues first (the longest
 * projected wait first), then growing ones (the highest arrival ÷ completion first), then the rest
 * by id; with `queue_id`, that queue alone with its tenants and job types (NOT_FOUND when unknown).
 */
export const signalsProcedure = viewerReadProcedure
  .input(ZSignalsInput)
  .output(ZSignals)
  .query(async ({ ctx, input }) => {
    const s = await readSignals(ctx.db, { windowS: input.window_s, ...(input.queue_id ? { queueId: input.queue_id } : {}) });
    if (input.queue_id && s.queues.length === 0) throw new AppError("NOT_FOUND", { message: `queue ${input.queue_id} not found` });
    const queues = s.queues.map((q) => queueSignals(q, Boolean(input.queue_id)));
    const urgency = (q: z.infer<typeof ZQueueSignals>) =>
      q.status === "at_risk"
        ? -(q.has_no_concurrency ? Number.MAX_VALUE : (q.projected_wait_s ?? 0))
        : q.status === "growing"
          ? -(q.arrival_to_completion ?? Number.MAX_VALUE)
          : 0;
    queues.sort((a, b) => RANK[a.status] - RANK[b.status] || urgency(a) - urgency(b) || a.queue_id.localeCompare(b.queue_id));
    return { at: s.at.toISOString(), window_s: s.windowS, queues };
  });
