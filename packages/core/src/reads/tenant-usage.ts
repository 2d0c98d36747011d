// A tenant's usage against the scheduling policy (the console's tenant page): per pool its actual
// share against its weight share, its running count against its quota, its throttling, and the
// resource keys its work uses. Bounded reads only: a grouped read of RUNNING jobs (jobs_running_idx,
// bounded by the capacity of the workers), one claimable-work probe per (queue, tenant) of the
// tenant's pools (policy/fair-share.ts) and the flow rollups; never a count over the job tables.
import type { Db } from "../db";
import { activeTenantsSql, weightShare } from "../policy/fair-share";
import { readFlow } from "./flow";

/** One pool the tenant has work in (running, claimable, or started in the window). */
export type TenantPoolUsage = {
  pool_id: string;
  /** The tenant's RUNNING jobs in the pool's queues, and every tenant's. */
  running: number;
  pool_running: number;
  /** running ÷ pool_running; null when nothing runs in the pool. */
  running_share: number | null;
  /** Starts over the window (rollups): the tenant's and every tenant's in the pool. */
  starts: number;
  pool_starts: number;
  /** starts ÷ pool_starts; null when nothing started. */
  start_share: number | null;
  /** The tenant has claimable work in the pool now (the policy's "active"). */
  is_active: boolean;
  /** Tenants active in the pool and the sum of their weights. */
  active_tenants: number;
  active_weight: number;
  /** weight ÷ active_weight ({@link weightShare}); null when the tenant is not active in the pool. */
  weight_share: number | null;
};

/** One resource key of the queues the tenant has work in. */
export type TenantResourceKeyUsage = {
  id: string;
  /** RUNNING jobs under the key (every queue and tenant), and the tenant's. */
  in_use: number;
  tenant_in_use: number;
  /** The limit the claim applies: the adaptive one or the configured one, the lower; null = none. */
  limit: number | null;
  /** Starts per second under the key over the window (rollups), every tenant's and the tenant's. */
  rate_per_s: number;
  tenant_rate_per_s: number;
  rate_limit: number | null;
  /** A provider said 429 and the key is paused until `throttled_until`. */
  is_throttled: boolean;
  throttled_until: string | null;
};

export type TenantUsage = {
  tenant_id: string;
  at: string;
  window_s: number;
  weight: number;
  /** The tenant's RUNNING jobs across every pool, against its quota (null = none). */
  running: number;
  max_running: number | null;
  /** 429 throttles per second of the tenant's jobs over the window (rollups). */
  throttle_per_s: number;
  /** Resource keys of the tenant's queues throttled now. */
  throttled_keys: string[];
  pools: TenantPoolUsage[];
  resource_keys: TenantResourceKeyUsage[];
};

const ratio = (n: number, d: number): number | null => (d === 0 ? null : n / d);

/** The usage of tenant `tenantId` over the last `windowS` seconds (default 300), or null for an unknown tenant. */
export const readTenantUsage = async (db: Db, params: { tenantId: string; windowS?: number; now?: Date }): Promise<TenantUsage | null> => {
  const windowS = params.windowS ?? 300;
  const head = await db.query<{ now: Date; weight: number; max_running: number | null }>(
    `SELECT coalesce($2::timestamptz, now()) AS now, t.weight, t.max_running FROM tenants t WHERE t.id = $1`,
    [params.tenantId, params.now ?? null],
  );
  const tenant = head.rows[0];
  if (!tenant) return null;
  const now = tenant.now;
  const [running, queues, mineActive, flow] = await Promise.all([
    // Every RUNNING job grouped by (queue, tenant): jobs_running_idx holds RUNNING rows only.
    db.query<{ queue_id: string; tenant_id: string; n: number }>(
      `SELECT queue_id, tenant_id, count(*)::int AS n FROM jobs WHERE state = 'RUNNING' GROUP BY 1, 2`,
    ),
    db.query<{
      id: string;
      pool_id: string;
      resource_key_id: string | null;
      concurrency_limit: number | null;
      current_limit: number | null;
      rate_per_second: number | null;
      throttled_until: Date | null;
    }>(
      `SELECT q.id, q.pool_id, q.resource_key_id, rk.concurrency_limit, rk.current_limit, rk.rate_per_second,
              CASE WHEN rk.throttled_until > $1 THEN rk.throttled_until END AS throttled_until
         FROM queues q LEFT JOIN resource_keys rk ON rk.id = q.resource_key_id
        ORDER BY q.id`,
      [now],
    ),
    // The queues the tenant is active in (one probe per queue it ever used: its fair_clocks rows).
    db.query<{ queue_id: string }>(`SELECT a.queue_id FROM (${activeTenantsSql("$1::timestamptz")}) a WHERE a.tenant_id = $2`, [now, params.tenantId]),
    readFlow(db, { from: new Date(now.getTime() - windowS * 1000), to: now }),
  ]);
  const queueOf = new Map(queues.rows.map((q) => [q.id, q]));
  const mineRunning = running.rows.filter((r) => r.tenant_id === params.tenantId);
  const mineFlow = flow.filter((f) => f.tenantId === params.tenantId);
  // The queues the tenant has work in: running, claimable now, or started in the window.
  const queueIds = new Set([
    ...mineRunning.map((r) => r.queue_id),
    ...mineActive.rows.map((a) => a.queue_id),
    ...mineFlow.filter((f) => f.starts > 0).map((f) => f.queueId),
  ]);
  const poolIds = [...new Set([...queueIds].map((id) => queueOf.get(id)?.pool_id).filter((p): p is string => p !== undefined))].sort();
  const active = poolIds.length
    ? (await db.query<{ pool_id: string; tenant_id: string; weight: number }>(`${activeTenantsSql("$1::timestamptz", "q.pool_id = ANY($2)")}`, [now, poolIds]))
        .rows
    : [];
  const poolOfQueue = (queueId: string) => queueOf.get(queueId)?.pool_id;
  const sum = <T>(rows: readonly T[], of: (r: T) => number) => rows.reduce((n, r) => n + of(r), 0);

  const pools = poolIds.map((poolId): TenantPoolUsage => {
    const inPool = <T extends { queue_id?: string; queueId?: string }>(r: T) => poolOfQueue((r.queue_id ?? r.queueId)!) === poolId;
    const poolRunning = sum(running.rows.filter(inPool), (r) => r.n);
    const mine = sum(mineRunning.filter(inPool), (r) => r.n);
    const poolStarts = sum(flow.filter(inPool), (f) => f.starts);
    const starts = sum(mineFlow.filter(inPool), (f) => f.starts);
    const activeHere = [...new Map(active.filter((a) => a.pool_id === poolId).map((a) => [a.tenant_id, { tenantId: a.tenant_id, weight: a.weight }])).values()];
    return {
      pool_id: poolId,
      running: mine,
      pool_running: poolRunning,
      running_share: ratio(mine, poolRunning),
      starts,
      pool_starts: poolStarts,
      start_share: ratio(starts, poolStarts),
      is_active: activeHere.some((a) => a.tenantId === params.tenantId),
      active_tenants: activeHere.length,
      active_weight: sum(activeHere, (a) => a.weight),
      weight_share: weightShare(params.tenantId, activeHere),
    };
  });

  const keyIds = [...new Set([...queueIds].map((id) => queueOf.get(id)?.resource_key_id).filter((k): k is string => Boolean(k)))].sort();
  const resourceKeys = keyIds.map((keyId): TenantResourceKeyUsage => {
    const key = queues.rows.find((q) => q.resource_key_id === keyId)!;
    const underKey = <T extends { queue_id?: string; queueId?: string }>(r: T) => queueOf.get((r.queue_id ?? r.queueId)!)?.resource_key_id === keyId;
    const limits = [key.current_limit, key.concurrency_limit].filter((l): l is number => l !== null);
    return {
      id: keyId,
      in_use: sum(running.rows.filter(underKey), (r) => r.n),
      tenant_in_use: sum(mineRunning.filter(underKey), (r) => r.n),
      limit: limits.length ? Math.min(...limits) : null,
      rate_per_s: sum(flow.filter(underKey), (f) => f.starts) / windowS,
      tenant_rate_per_s: sum(mineFlow.filter(underKey), (f) => f.starts) / windowS,
      rate_limit: key.rate_per_second,
      is_throttled: key.throttled_until !== null,
      throttled_until: key.throttled_until?.toISOString() ?? null,
    };
  });

  return {
    tenant_id: params.tenantId,
    at: now.toISOString(),
    window_s: windowS,
    weight: tenant.weight,
    running: sum(mineRunning, (r) => r.n),
    max_running: tenant.max_running,
    throttle_per_s: sum(mineFlow, (f) => f.throttles) / windowS,
    throttled_keys: resourceKeys.filter((k) => k.is_throttled).map((k) => k.id),
    pools,
    resource_keys: resourceKeys,
  };
};
