import { AppError } from "@porter/contracts";
import type pg from "pg";
import type { EnqueuePolicy } from "../policy/clamp";

type Arrival = { tenantId: string; queueId: string; policy: EnqueuePolicy };

/** Seconds a producer is told to wait when a tenant's backlog is full (it drains at the claim rate). */
const BACKLOG_RETRY_AFTER_S = 5;

/**
 * Admission control at enqueue, inside the enqueue's transaction. Per tenant with limits, under a
 * transaction-scoped advisory lock of the tenant (so concurrent producers cannot both pass a check
 * that only one of them fits — the lock is held until the enqueue commits):
 * - arrival rate: a token bucket (`rate_buckets`, scope 'tenant_admit', burst = max(1, rate));
 * - backlog cap: READY/RETRY_WAIT jobs of the tenant, counted up to the cap through the claim index.
 * Over a limit, jobs of queues configured to `defer` are accepted into the lowest class (their
 * indexes are returned; the caller sets priority 0) and the rest refuse the whole batch with
 * 429 and `Retry-After`. Nothing is written before the refusal, so nothing is stored.
 */
export const admit = async (client: pg.PoolClient | pg.Client, arrivals: Arrival[], now: Date): Promise<number[]> => {
  const byTenant = new Map<string, number[]>();
  arrivals.forEach((a, i) => {
    if (a.policy.tenantRatePerSecond === null && a.policy.tenantBacklogCap === null) return;
    byTenant.set(a.tenantId, [...(byTenant.get(a.tenantId) ?? []), i]);
  });
  const deferred: number[] = [];
  // Buckets are locked in tenant order, the same for every producer: no deadlock.
  for (const [tenantId, indexes] of [...byTenant].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    const policy = arrivals[indexes[0]!]!.policy;
    const n = indexes.length;
    let overBy: { reason: string; retryAfterS: number } | null = null;
    // Later statements take new snapshots: they see every job committed by the lock's previous holder.
    await client.query(`SELECT pg_advisory_xact_lock(hashtext('porter.admit'), hashtext($1))`, [tenantId]);

    if (policy.tenantBacklogCap !== null) {
      const { rows } = await client.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM (
           SELECT 1 FROM jobs j
            WHERE j.queue_id = ANY (ARRAY(SELECT id FROM queues)) AND j.tenant_id = $1
              AND j.state IN ('READY', 'RETRY_WAIT') LIMIT $2) b`,
        [tenantId, policy.tenantBacklogCap + 1],
      );
      if (rows[0]!.n + n > policy.tenantBacklogCap) {
        overBy = { reason: `backlog cap of ${policy.tenantBacklogCap} queued jobs`, retryAfterS: BACKLOG_RETRY_AFTER_S };
      }
    }

    let tokens = Infinity;
    const rate = policy.tenantRatePerSecond;
    if (rate !== null) {
      const burst = Math.max(1, rate);
      const { rows } = await client.query<{ tokens: number }>(
        `INSERT INTO rate_buckets (scope, key, tokens, updated_at) VALUES ('tenant_admit', $1, $2, $3)
         ON CONFLICT (scope, key) DO UPDATE SET tokens = rate_buckets.tokens
         RETURNING porter_tokens(tokens, updated_at, $4, $2, $3) AS tokens`,
        [tenantId, burst, now, rate],
      );
      tokens = rows[0]!.tokens;
      if (!overBy && tokens < n) {
        overBy = { reason: `arrival rate of ${rate} jobs/s`, retryAfterS: Math.max(1, Math.ceil((n - tokens) / rate)) };
      }
    }

    if (overBy) {
      const refused = indexes.filter((i) => arrivals[i]!.policy.admission !== "defer");
      if (refused.length > 0) {
        throw new AppError("TOO_MANY_REQUESTS", {
          message: `tenant ${tenantId} is over its ${overBy.reason}; retry after ${overBy.retryAfterS} s`,
          retryAfterS: overBy.retryAfterS,
          details: { tenant_id: tenantId, reason: overBy.reason },
        });
      }
      deferred.push(...indexes);
    }
    if (rate !== null) {
      const spent = overBy ? 0 : n;
      await client.query(
        `UPDATE rate_buckets SET tokens = greatest(0, $3::float8 - $4), updated_at = $2
          WHERE scope = 'tenant_admit' AND key = $1`,
        [tenantId, now, tokens, spent],
      );
    }
  }
  return deferred;
};
