-- porter_age: one priority-aging pass (maintenance, queues with aging_s; called by
-- packages/core/src/sql/age-priorities.ts, which states the rule). A routine: this file is its one
-- source, re-applied by the migrator whenever its checksum changes.
--
-- The oldest waiting jobs below the top priority, per queue, oldest first (jobs_aging_idx), rise
-- linearly towards 100 over aging_s; base_priority keeps the producer's priority. The pass takes the
-- aging lock of every pool with aging queues, exclusively and in a fixed order: claims of those
-- pools (claim.sql takes it shared, first) wait for the pass (a few ms) instead of skipping the rows
-- it has locked and handing out lower-priority work. The update runs as a new statement, after the
-- locks, so it sees every claim committed before them.
CREATE OR REPLACE FUNCTION porter_age(p_now timestamptz, p_batch integer) RETURNS bigint LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  v_aged bigint;
BEGIN
  PERFORM pg_advisory_xact_lock(hashtext('porter.aging:' || p.pool_id))
     FROM (SELECT DISTINCT q.pool_id FROM queues q WHERE q.aging_s IS NOT NULL ORDER BY 1) p;
  WITH at AS (SELECT coalesce(p_now, clock_timestamp()) AS t),
  due AS (
    SELECT j.id,
           least(100, coalesce(j.base_priority, j.priority)
                 + floor(extract(epoch FROM (SELECT t FROM at) - j.run_at) / q.aging_s
                         * (100 - coalesce(j.base_priority, j.priority))))::int AS target
      FROM queues q
      CROSS JOIN LATERAL (
        SELECT j.id, j.priority, j.base_priority, j.run_at FROM jobs j
         WHERE j.queue_id = q.id AND j.state IN ('READY', 'RETRY_WAIT') AND j.priority < 100
           AND j.run_at <= (SELECT t FROM at)
         ORDER BY j.run_at
         LIMIT p_batch
      ) j
     WHERE q.aging_s IS NOT NULL
  ), aged AS (
    UPDATE jobs j SET base_priority = coalesce(j.base_priority, j.priority), priority = due.target
      FROM due
     WHERE j.id = due.id AND due.target > j.priority AND j.state IN ('READY', 'RETRY_WAIT')
    RETURNING j.id
  )
  SELECT count(*) INTO v_aged FROM aged;
  RETURN v_aged;
END
$$;
