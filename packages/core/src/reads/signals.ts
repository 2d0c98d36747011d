// Derived signals (issue 14, deliverable 2; docs/observability.md "Signals"): what `porter stats`
// prints and the metrics endpoint exports. Flow comes from the rollups (reads/flow.ts); the state of
// the backlog from O(1) index probes (oldest age) and bounded counts (ready); nothing counts the
// job tables whole.
import { allOn, type Db } from "../db";
import { addFlow, emptyFlow, type FlowRow, type FlowTotals, histogramQuantile, readFlow } from "./flow";
import { oldestClaimableRunAtSql } from "./oldest-claimable";

/** Ready jobs are counted up to this many per queue (an index-only range scan); past it the count is a lower bound. */
export const READY_COUNT_BOUND = 100_000;
/** A worker whose heartbeat is older than this does not count toward a pool's concurrency. */
const LIVE_WORKER_MS = 60_000;

export type Percentiles = { p50: number | null; p95: number | null; p99: number | null };

/** Flow-derived signals of one scope (a queue, or a tenant or job type within it) over the window. */
export type FlowSignals = {
  arrivals: number;
  /** Claims (attempts started) over the window: a tenant's or job type's share of the queue's work. */
  starts: number;
  /** Terminal outcomes: succeeded + dead + cancelled + expired. */
  completions: number;
  arrivalPerS: number;
  completionPerS: number;
  /** arrivals ÷ completions over the window; null when nothing completed. Above 1: the backlog grows. */
  arrivalToCompletion: number | null;
  succeeded: number;
  dead: number;
  cancelled: number;
  expired: number;
  retryPerS: number;
  retriesByCode: Record<string, number>;
  leaseExpiryPerS: number;
  throttlePerS: number;
  /** Mean run time (start → end) over the window, seconds; null without ended attempts. */
  meanRunS: number | null;
  /** Wait (ready → claim) and run (start → end) percentiles in ms, to within one bucket (×2). */
  waitMs: Percentiles;
  runMs: Percentiles;
};

export type QueueSignals = FlowSignals & {
  queueId: string;
  poolId: string;
  paused: boolean;
  targetWaitS: number | null;
  /** Age of the oldest claimable job (READY, or RETRY_WAIT whose time came), seconds; null when none. */
  oldestClaimableAgeS: number | null;
  ready: number;
  /** True when `ready` hit {@link READY_COUNT_BOUND} (the backlog is at least that). */
  isReadyLowerBound: boolean;
  running: number;
  /** The concurrency the pool's live workers, the pool and queue caps and the resource key's limit and rate allow. */
  effectiveConcurrency: number;
  /** ready × mean run time ÷ effective concurrency; null without a run time or without concurrency. */
  backlogS: number | null;
  /** ready ÷ (completion rate − arrival rate); null when growing or when nothing is ready. */
  drainS: number | null;
  /** Ready work and arrivals at or above completions over the window. */
  isGrowing: boolean;
  /** The wait a job enqueued now would see: the backlog seconds, at least the oldest age when growing. */
  projectedWaitS: number | null;
  /** projectedWaitS > targetWaitS (also: ready work and no concurrency at all). */
  isAtRisk: boolean;
  dlq: { count: number; oldestAgeS: number | null; unowned: number };
  byTenant: Array<FlowSignals & { tenantId: string }>;
  byJobType: Array<FlowSignals & { jobType: string }>;
};

export type PoolSignals = {
  poolId: string;
  liveWorkers: number;
  workerConcurrency: number;
  /** Workers that meet the pool's queues' wait targets (or keep up with arrivals), fewer when throttled. */
  desiredWorkers: number;
  /** Resource keys of the pool throttled now or with 429s in the window. */
  throttledKeys: string[];
};

export type Signals = { at: Date; windowS: number; queues: QueueSignals[]; pools: PoolSignals[] };

const percentiles = (histogram: number[]): Percentiles => ({
  p50: histogramQuantile(histogram, 0.5)?.ms ?? null,
  p95: histogramQuantile(histogram, 0.95)?.ms ?? null,
  p99: histogramQuantile(histogram, 0.99)?.ms ?? null,
});

/** The flow signals of totals over a window of `windowS` seconds (pure). */
export const flowSignals = (f: FlowTotals, windowS: number): FlowSignals => {
  const completions = f.succeeded + f.dead + f.cancelled + f.expired;
  return {
    arrivals: f.arrivals,
    starts: f.starts,
    completions,
    arrivalPerS: f.arrivals / windowS,
    completionPerS: completions / windowS,
    arrivalToCompletion: completions === 0 ? null : f.arrivals / completions,
    succeeded: f.succeeded,
    dead: f.dead,
    cancelled: f.cancelled,
    expired: f.expired,
    retryPerS: f.retried / windowS,
    retriesByCode: f.retriesByCode,
    leaseExpiryPerS: f.leaseExpiries / windowS,
    throttlePerS: f.throttles / windowS,
    meanRunS: f.runs === 0 ? null : f.runMsSum / f.runs / 1000,
    waitMs: percentiles(f.waitHistogram),
    runMs: percentiles(f.runHistogram),
  };
};

/** What a queue's backlog means (pure): backlog seconds, drain, growth, projected wait, risk. */
export const backlogSignals = (input: {
  ready: number;
  meanRunS: number | null;
  effectiveConcurrency: number;
  arrivalPerS: number;
  completionPerS: number;
  oldestClaimableAgeS: number | null;
  targetWaitS: number | null;
}): Pick<QueueSignals, "backlogS" | "drainS" | "isGrowing" | "projectedWaitS" | "isAtRisk"> => {
  const { ready, meanRunS, effectiveConcurrency } = input;
  const backlogS = ready === 0 ? 0 : meanRunS === null || effectiveConcurrency <= 0 ? null : (ready * meanRunS) / effectiveConcurrency;
  const net = input.completionPerS - input.arrivalPerS;
  const isGrowing = ready > 0 && net <= 0;
  const drainS = ready === 0 ? 0 : isGrowing ? null : ready / net;
  const oldest = input.oldestClaimableAgeS ?? 0;
  const projectedWaitS =
    backlogS === null ? (ready > 0 && effectiveConcurrency <= 0 ? Number.POSITIVE_INFINITY : null) : isGrowing ? Math.max(backlogS, oldest) : backlogS;
  const isAtRisk = input.targetWaitS !== null && projectedWaitS !== null && projectedWaitS > input.targetWaitS;
  return { backlogS, drainS, isGrowing, projectedWaitS, isAtRisk };
};

/**
 * Workers a pool should run (pure): per queue, the concurrency that keeps up with arrivals
 * (arrival rate × mean run time) plus what works the ready backlog off within the queue's wait
 * target (ready × mean run ÷ target; no target: keeping up only), capped by what the queue's limits
 * allow — a throttled resource key's limit above all: more workers would only hit more 429s. The
 * sum over queues ÷ the concurrency of one worker, rounded up; at least 1 while work waits.
 */
export const desiredWorkers = (
  queues: Array<{ ready: number; arrivalPerS: number; meanRunS: number | null; targetWaitS: number | null; limit: number | null }>,
  workerConcurrency: number,
): number => {
  let needed = 0;
  let isWaiting = false;
  for (const q of queues) {
    if (q.ready > 0 || q.arrivalPerS > 0) isWaiting = true;
    if (q.meanRunS === null) continue;
    const want = q.arrivalPerS * q.meanRunS + (q.targetWaitS ? (q.ready * q.meanRunS) / q.targetWaitS : 0);
    needed += q.limit === null ? want : Math.min(want, q.limit);
  }
  const workers = Math.ceil(needed / Math.max(1, workerConcurrency));
  return isWaiting ? Math.max(1, workers) : workers;
};

type QueueRow = {
  id: string;
  pool_id: string;
  paused: boolean;
  target_wait_s: number | null;
  queue_cap: number | null;
  pool_cap: number | null;
  worker_concurrency: number;
  live_workers: number;
  live_concurrency: number;
  rk_id: string | null;
  rk_limit: number | null;
  rk_rate: number | null;
  rk_throttled: boolean;
  oldest_s: number | null;
  ready: string;
  running: string;
  dlq_count: string;
  dlq_oldest_s: number | null;
  dlq_unowned: string;
};

/**
 * Every queue's signals (or one queue's; `tenantId` narrows the flow to one tenant) over the
 * window ending at `now`, and every pool's recommended worker count.
 *
 * Oldest claimable age: the min run_at of claimable jobs below the top priority is the first entry
 * of jobs_aging_idx (queue_id, run_at) — O(1); the top-priority ones (priority 100, claimed first,
 * so few) come from jobs_claim_idx per (queue, tenant) in fair_clocks. Ready: counted up to
 * {@link READY_COUNT_BOUND} from the same two indexes (at a 1M backlog: 0.04 ms for the oldest age,
 * ~26 ms for a count that hits the bound; docs/observability.md "Signals"). DLQ: the failure groups'
 * dead_now of the queue's job types (O(groups)); unowned = in a group without an owner; the oldest
 * dead job by one probe of finished_jobs' (queue_id, state, finished_at) index.
 */
export const readSignals = async (db: Db, params: { now?: Date; windowS?: number; queueId?: string; tenantId?: string } = {}): Promise<Signals> => {
  const now = params.now ?? new Date();
  const windowS = params.windowS ?? 900;
  const from = new Date(now.getTime() - windowS * 1000);
  const [flow, { rows }] = await allOn(db, [
    () => readFlow(db, { from, to: new Date(now.getTime() + 1), queueId: params.queueId, tenantId: params.tenantId }),
    () =>
      db.query<QueueRow>(
        `SELECT q.id, q.pool_id, q.paused, q.target_wait_s, q.concurrency_cap AS queue_cap, p.concurrency_cap AS pool_cap,
              p.worker_concurrency, w.n AS live_workers, w.c AS live_concurrency,
              rk.id AS rk_id, coalesce(least(rk.current_limit, rk.concurrency_limit), rk.current_limit, rk.concurrency_limit) AS rk_limit,
              rk.rate_per_second AS rk_rate, coalesce(rk.throttled_until > $1::timestamptz, false) AS rk_throttled,
              extract(epoch FROM $1::timestamptz - o.oldest)::float8 AS oldest_s, r.n::text AS ready,
              (SELECT count(*) FROM jobs j WHERE j.queue_id = q.id AND j.state = 'RUNNING')::text AS running,
              d.n::text AS dlq_count, extract(epoch FROM $1::timestamptz - d.oldest)::float8 AS dlq_oldest_s, d.unowned::text AS dlq_unowned
         FROM queues q
         JOIN pools p ON p.id = q.pool_id
         LEFT JOIN resource_keys rk ON rk.id = q.resource_key_id
         CROSS JOIN LATERAL (
           SELECT count(*)::int AS n, coalesce(sum(wk.concurrency), 0)::int AS c FROM workers wk
            WHERE wk.pool_id = q.pool_id AND wk.stopped_at IS NULL AND NOT wk.draining AND wk.heartbeat_at > $1::timestamptz - $2 * interval '1 millisecond'
         ) w
         CROSS JOIN LATERAL (SELECT ${oldestClaimableRunAtSql("q.id", "$1::timestamptz")} AS oldest) o
         CROSS JOIN LATERAL (
           -- Below the top priority: an index-only range scan of jobs_aging_idx; the top priority per tenant.
           SELECT (SELECT count(*) FROM (
                     SELECT 1 FROM jobs j WHERE j.queue_id = q.id AND j.state IN ('READY', 'RETRY_WAIT') AND j.priority < 100
                        AND j.run_at <= $1::timestamptz LIMIT $3) b)
                + (SELECT coalesce(sum(t.n), 0) FROM fair_clocks fc CROSS JOIN LATERAL (
                     SELECT count(*) AS n FROM (
                       SELECT 1 FROM jobs j WHERE j.queue_id = fc.queue_id AND j.tenant_id = fc.tenant_id AND j.state IN ('READY', 'RETRY_WAIT')
                          AND j.priority >= 100 AND j.run_at <= $1::timestamptz LIMIT $3) c) t
                    WHERE fc.queue_id = q.id) AS n
         ) r
         CROSS JOIN LATERAL (
           -- O(failure groups), not O(dead jobs): the groups' dead_now (kept by the DLQ triggers) of
           -- the queue's job types, and the oldest dead job by one probe of finished_jobs'
           -- (queue_id, state, finished_at) index.
           SELECT coalesce(sum(g.dead_now), 0) AS n,
                  coalesce(sum(g.dead_now) FILTER (WHERE g.owner_id IS NULL), 0) AS unowned,
                  (SELECT f.finished_at FROM finished_jobs f WHERE f.queue_id = q.id AND f.state = 'DEAD'
                    ORDER BY f.finished_at LIMIT 1) AS oldest
             FROM job_types jt JOIN dlq_groups g ON g.job_type = jt.id AND g.dead_now > 0
            WHERE jt.queue_id = q.id
         ) d
        WHERE $4::text IS NULL OR q.id = $4
        ORDER BY q.id`,
        [now, LIVE_WORKER_MS, READY_COUNT_BOUND, params.queueId ?? null],
      ),
  ]);

  const queues: QueueSignals[] = rows.map((q) => {
    const mine = flow.filter((f) => f.queueId === q.id);
    const totals = mine.reduce<FlowTotals>(addFlow, emptyFlow());
    const fs = flowSignals(totals, windowS);
    const ready = Math.min(Number(q.ready), READY_COUNT_BOUND);
    const limits = [q.live_concurrency, q.pool_cap, q.queue_cap, q.rk_limit, q.rk_rate !== null && fs.meanRunS !== null ? q.rk_rate * fs.meanRunS : null];
    const effectiveConcurrency = q.paused ? 0 : Math.min(...limits.filter((l): l is number => l !== null));
    const oldest = q.oldest_s === null ? null : Math.max(0, q.oldest_s);
    return {
      ...fs,
      queueId: q.id,
      poolId: q.pool_id,
      paused: q.paused,
      targetWaitS: q.target_wait_s,
      oldestClaimableAgeS: oldest,
      ready,
      isReadyLowerBound: ready >= READY_COUNT_BOUND,
      running: Number(q.running),
      effectiveConcurrency,
      ...backlogSignals({
        ready,
        meanRunS: fs.meanRunS,
        effectiveConcurrency,
        arrivalPerS: fs.arrivalPerS,
        completionPerS: fs.completionPerS,
        oldestClaimableAgeS: oldest,
        targetWaitS: q.target_wait_s,
      }),
      dlq: { count: Number(q.dlq_count), oldestAgeS: q.dlq_oldest_s === null ? null : Math.max(0, q.dlq_oldest_s), unowned: Number(q.dlq_unowned) },
      byTenant: groupBy(mine, (f) => f.tenantId).map(([tenantId, t]) => ({ tenantId, ...flowSignals(t, windowS) })),
      byJobType: groupBy(mine, (f) => f.jobType).map(([jobType, t]) => ({ jobType, ...flowSignals(t, windowS) })),
    };
  });

  const pools = new Map<string, { rows: QueueRow[]; signals: QueueSignals[] }>();
  rows.forEach((q, i) => {
    const p = pools.get(q.pool_id) ?? { rows: [], signals: [] };
    p.rows.push(q);
    p.signals.push(queues[i]!);
    pools.set(q.pool_id, p);
  });
  return {
    at: now,
    windowS,
    queues,
    pools: [...pools.entries()].map(([poolId, p]) => {
      const throttled = p.rows.filter((q, i) => q.rk_id !== null && (q.rk_throttled || p.signals[i]!.throttlePerS > 0));
      const workerConcurrency = p.rows[0]!.worker_concurrency;
      return {
        poolId,
        liveWorkers: p.rows[0]!.live_workers,
        workerConcurrency,
        desiredWorkers: desiredWorkers(
          p.signals.map((s, i) => {
            const q = p.rows[i]!;
            const isThrottled = throttled.includes(q);
            // A throttled key: at most what runs now under it (its adaptive limit when set).
            const throttleLimit = isThrottled ? Math.max(1, q.rk_limit ?? s.running) : null;
            const caps = [q.queue_cap, q.rk_limit, throttleLimit].filter((c): c is number => c !== null);
            return {
              ready: s.ready,
              arrivalPerS: s.arrivalPerS,
              meanRunS: s.meanRunS,
              targetWaitS: s.targetWaitS,
              limit: caps.length ? Math.min(...caps) : null,
            };
          }),
          workerConcurrency,
        ),
        throttledKeys: [...new Set(throttled.map((q) => q.rk_id!))].sort(),
      };
    }),
  };
};

const groupBy = (rows: FlowRow[], key: (f: FlowRow) => string): Array<[string, FlowTotals]> => {
  const m = new Map<string, FlowTotals>();
  for (const f of rows) m.set(key(f), addFlow(m.get(key(f)) ?? emptyFlow(), f));
  return [...m.entries()].sort(([a], [b]) => a.localeCompare(b));
};
