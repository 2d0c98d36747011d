// The fair-share policy's notion of an "active" tenant, one home for every reader that explains a
// share (the console's tenant usage). The claim (sql/routines/claim.sql, its `active` CTEs) applies
// the same predicate: weights are shared among the tenants with claimable work in an unpaused queue.

/**
 * SQL row source `(queue_id, pool_id, tenant_id, weight)`: the tenants active in each unpaused queue
 * at `now` (an SQL expression), as the claim sees them — a `fair_clocks` row for (queue, tenant)
 * and at least one claimable job (READY, or RETRY_WAIT whose time came, deadline not passed): one
 * probe of jobs_claim_idx per (queue, tenant). `queueFilter` narrows the queues (an SQL condition
 * on `q`, e.g. `q.pool_id = ANY($2)`).
 */
export const activeTenantsSql = (now: string, queueFilter = "true"): string => `
  SELECT q.id AS queue_id, q.pool_id, fc.tenant_id, t.weight
    FROM queues q
    JOIN fair_clocks fc ON fc.queue_id = q.id
    JOIN tenants t ON t.id = fc.tenant_id
    -- A LIMIT 1 in jobs_claim_idx's order, not an EXISTS (whose plan may scan jobs sequentially:
    -- the whole table for a tenant with no claimable work; claim.sql, docs/performance.md).
    CROSS JOIN LATERAL (SELECT 1 FROM jobs j
                         WHERE j.queue_id = q.id AND j.tenant_id = fc.tenant_id AND j.state IN ('READY', 'RETRY_WAIT')
                           AND j.run_at <= ${now} AND (j.deadline_at IS NULL OR j.deadline_at > ${now})
                         ORDER BY j.priority DESC, j.vft, j.id LIMIT 1) w
   WHERE NOT q.paused AND (${queueFilter})`;

/**
 * A tenant's weight share among the active tenants: its weight ÷ the sum of their weights (each
 * tenant once). Null when the tenant is not among them: it waits for nothing, so it claims no share.
 */
export const weightShare = (tenantId: string, active: ReadonlyArray<{ tenantId: string; weight: number }>): number | null => {
  const weights = new Map(active.map((a) => [a.tenantId, a.weight]));
  const own = weights.get(tenantId);
  if (own === undefined) return null;
  let total = 0;
  for (const w of weights.values()) total += w;
  return own / total;
};
