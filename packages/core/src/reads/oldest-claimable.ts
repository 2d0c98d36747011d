// The age of a queue's oldest claimable job (READY, or RETRY_WAIT whose time came) — one home for
// the console's overview, the Prometheus gauge and the derived signals, so all three say the same.

/**
 * SQL expression: the `run_at` of queue `queue`'s oldest claimable job at instant `now` (both SQL
 * expressions, e.g. `q.id` and `now()`), NULL when none. O(1) per queue plus O(top-priority jobs):
 * below the top priority it is the first entry of jobs_aging_idx (queue_id, run_at); jobs at
 * priority 100 are not in that index (aging never raises them), so they come from jobs_claim_idx
 * per (queue, tenant) listed in fair_clocks — few, since they are claimed first.
 */
export const oldestClaimableRunAtSql = (queue: string, now: string): string => `least(
  (SELECT j.run_at FROM jobs j
    WHERE j.queue_id = ${queue} AND j.state IN ('READY', 'RETRY_WAIT') AND j.priority < 100 AND j.run_at <= ${now}
    ORDER BY j.run_at LIMIT 1),
  (SELECT min(t.run_at) FROM fair_clocks fc CROSS JOIN LATERAL (
     SELECT min(j.run_at) AS run_at FROM jobs j
      WHERE j.queue_id = fc.queue_id AND j.tenant_id = fc.tenant_id AND j.state IN ('READY', 'RETRY_WAIT')
        AND j.priority >= 100 AND j.run_at <= ${now}) t
    WHERE fc.queue_id = ${queue}))`;
