/**
 * Weighted fair queuing's reservation of virtual time (docs/scheduling.md), as an
 * `INSERT … ON CONFLICT` for a CTE. Each (queue, tenant) group of `n` jobs in `groups` — a row
 * source with queue_id, tenant_id and n — moves its clock to max(last_vft, queue clock) + n/weight;
 * rows are locked in (queue, tenant) order, the same for every writer (no deadlock). Returns
 * queue_id, tenant_id, last_vft and weight: the group's k-th job (k = 1…n, in enqueue order) takes
 * last_vft − (n − k)/weight. Shared by enqueue and redrive, so a redriven job queues exactly as
 * a new one would. `extraFrom` joins one more row source (a one-row CTE with a side effect).
 */
export const reserveClocksSql = (groups: string, extraFrom?: string): string => `
  INSERT INTO fair_clocks (queue_id, tenant_id, last_vft)
  SELECT g.queue_id, g.tenant_id, q.vclock + g.n::float8 / t.weight
    FROM ${groups} g JOIN queues q ON q.id = g.queue_id JOIN tenants t ON t.id = g.tenant_id${extraFrom ? `, ${extraFrom}` : ""}
   ORDER BY g.queue_id, g.tenant_id
  ON CONFLICT (queue_id, tenant_id) DO UPDATE
    SET last_vft = greatest(fair_clocks.last_vft, (SELECT q.vclock FROM queues q WHERE q.id = EXCLUDED.queue_id))
                   + (EXCLUDED.last_vft - (SELECT q.vclock FROM queues q WHERE q.id = EXCLUDED.queue_id))
  RETURNING queue_id, tenant_id, last_vft, (SELECT t.weight FROM tenants t WHERE t.id = fair_clocks.tenant_id) AS weight`;
