-- The eligibility of dead jobs for a redrive (issue 12, deliverable 3): the one home of the rule,
-- called by the dry run (packages/core/src/dlq/redrive-plan.ts), by the creation of a redrive
-- (which skips `already` up front) and by the runner before each batch moves its jobs
-- (packages/core/src/dlq/redrive-runner.ts). A routine: this file is the one source of the
-- function below, re-applied by the migrator whenever its checksum changes.
--
-- porter_redrive_eligibility(job ids, cutoff, force, now, redrive id) returns one row per distinct
-- id asked: (job_id, reason), reason NULL when the job may be redriven, else the first that holds:
--   already     not DEAD any more (redriven, gone), died after the cutoff (a later life of the
--               job, not the death that was asked about), or pending in another running redrive
--   expired     its deadline passed (by `now`)                                  } `force` lets
--   partial     it recorded effects (partially completed)                       } these three
--   permanent   its error's class is 'permanent' (invalid input, permission…)   } through
--   over_quota  its tenant's backlog (READY + RETRY_WAIT) has no room for it — counted once per
--               tenant, up to the cap, through the claim index; the jobs of one tenant take the
--               room in job order — or the tenant row is gone (its jobs could not be queued)
-- It reads only (STABLE): the callers lock what they move.
CREATE OR REPLACE FUNCTION porter_redrive_eligibility(p_job_ids uuid[], p_cutoff timestamptz, p_force boolean, p_now timestamptz,
                                                      p_redrive_id uuid)
RETURNS TABLE (job_id uuid, reason text)
LANGUAGE sql STABLE AS $$
  WITH asked AS (
    SELECT DISTINCT a.id FROM unnest(p_job_ids) AS a(id)
  ), found AS (
    SELECT a.id, f.tenant_id, f.state::text AS state, f.finished_at, f.deadline_at, f.partial, f.error ->> 'class' AS class
      FROM asked a LEFT JOIN finished_jobs f ON f.job_id = a.id
  ), judged AS (
    SELECT r.id, r.tenant_id,
           CASE
             WHEN r.state IS DISTINCT FROM 'DEAD' OR r.finished_at > p_cutoff THEN 'already'
             WHEN EXISTS (SELECT 1 FROM redrive_items i JOIN redrives d ON d.id = i.redrive_id
                           WHERE i.job_id = r.id AND i.state = 'pending' AND d.status = 'running'
                             AND d.id IS DISTINCT FROM p_redrive_id) THEN 'already'
             WHEN NOT p_force AND r.deadline_at IS NOT NULL AND r.deadline_at <= p_now THEN 'expired'
             WHEN NOT p_force AND r.partial THEN 'partial'
             WHEN NOT p_force AND r.class = 'permanent' THEN 'permanent'
           END AS reason
      FROM found r
  ), room AS (
    -- NULL: no cap. The count stops at the cap (LIMIT): it costs at most cap index entries per
    -- tenant, whatever the backlog. The queue list lets the claim index (queue_id, tenant_id, …) serve it.
    SELECT t.tenant_id,
           CASE WHEN tn.id IS NULL THEN 0
                WHEN tn.backlog_cap IS NULL THEN NULL
                ELSE tn.backlog_cap - (SELECT count(*) FROM (
                       SELECT 1 FROM jobs j
                        WHERE j.queue_id = ANY (ARRAY(SELECT id FROM queues)) AND j.tenant_id = t.tenant_id
                          AND j.state IN ('READY', 'RETRY_WAIT')
                        LIMIT tn.backlog_cap) b)
           END AS room
      FROM (SELECT DISTINCT tenant_id FROM judged WHERE reason IS NULL) t
      LEFT JOIN tenants tn ON tn.id = t.tenant_id
  ), ranked AS (
    SELECT j.id, row_number() OVER (PARTITION BY j.tenant_id ORDER BY j.id) AS k
      FROM judged j WHERE j.reason IS NULL
  )
  SELECT j.id, coalesce(j.reason, CASE WHEN r.room IS NOT NULL AND k.k > r.room THEN 'over_quota' END)
    FROM judged j
    LEFT JOIN ranked k ON k.id = j.id
    LEFT JOIN room r ON r.tenant_id = j.tenant_id
$$;
