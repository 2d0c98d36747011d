-- Hot path, second pass (measured with bench/: see docs/performance.md).
--
-- 1. The claim runs as one function call: one round trip instead of four (BEGIN, lock, claim,
--    COMMIT), and PL/pgSQL caches the statement plans per session (no 3 ms re-plan per claim).
--    When a cap applies to the pool (pool cap or a queue cap), a transaction-level advisory lock
--    on the pool serializes count-then-claim across processes; the claim statement that follows
--    takes a new snapshot (READ COMMITTED, VOLATILE function) and so sees every claim committed
--    before the lock was granted. Claims commit with synchronous_commit off: a claim lost in a
--    crash only means its lease expires and the job runs again.
-- 2. Indexes no query needs any more: finished_jobs(finished_at) (retention scans per queue and
--    state through finished_jobs_queue_id_state_finished_at_idx) and idempotency_keys(job_id)
--    (retention deletes keys by their primary key).

CREATE FUNCTION porter_claim(p_pool text, p_worker text, p_limit integer, p_now timestamptz)
RETURNS TABLE (
  id bigint, job_id uuid, job_type text, queue_id text, tenant_id text, payload jsonb, priority integer,
  idempotency_key text, attempt integer, max_attempts integer, timeout_s integer, not_before timestamptz,
  deadline_at timestamptz, run_at timestamptz, trace_id text, created_at timestamptz, contract_version text,
  claimed_at timestamptz, lease_token bigint, lease_until timestamptz, lease_seconds integer,
  backoff_base_ms integer, backoff_cap_ms integer, cancel_requested_at timestamptz
) LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
  v_now timestamptz;
  v_token bigint;
BEGIN
  PERFORM set_config('synchronous_commit', 'off', true);
  IF EXISTS (SELECT 1 FROM pools p WHERE p.id = p_pool AND p.concurrency_cap IS NOT NULL)
     OR EXISTS (SELECT 1 FROM queues q WHERE q.pool_id = p_pool AND q.concurrency_cap IS NOT NULL AND NOT q.paused) THEN
    PERFORM pg_advisory_xact_lock(hashtext('porter.claim:' || p_pool));
  END IF;
  v_now := coalesce(p_now, clock_timestamp());
  v_token := nextval('lease_token_seq');
  RETURN QUERY
  WITH room AS (
    SELECT q.id AS queue_id,
           CASE WHEN q.concurrency_cap IS NULL THEN p_limit
                ELSE greatest(0, q.concurrency_cap - (SELECT count(*) FROM jobs r
                                                       WHERE r.state = 'RUNNING' AND r.queue_id = q.id))::int
           END AS free
      FROM queues q
     WHERE q.pool_id = p_pool AND NOT q.paused
  ), pool_room AS (
    SELECT CASE WHEN p.concurrency_cap IS NULL THEN p_limit
                ELSE greatest(0, p.concurrency_cap - (SELECT count(*) FROM jobs r JOIN queues q ON q.id = r.queue_id
                                                       WHERE r.state = 'RUNNING' AND q.pool_id = p.id))::int
           END AS free
      FROM pools p WHERE p.id = p_pool
  ), picked AS (
    -- Per queue, a LATERAL scan of jobs_claim_idx in claim order, skipping locked rows, limited by
    -- the queue's room; then the union cut to the pool's room and the caller's limit. The CTE is
    -- an optimisation fence: the UPDATE cannot touch more rows than picked here.
    SELECT c.id
      FROM room
      CROSS JOIN LATERAL (
        SELECT j.id, j.priority, j.run_at
          FROM jobs j
         WHERE j.queue_id = room.queue_id
           AND j.state IN ('READY', 'RETRY_WAIT')
           AND j.run_at <= v_now
           AND (j.deadline_at IS NULL OR j.deadline_at > v_now)
         ORDER BY j.priority DESC, j.run_at, j.id
         LIMIT least(room.free, p_limit)
         FOR UPDATE SKIP LOCKED
      ) c
     ORDER BY c.priority DESC, c.run_at, c.id
     LIMIT least(p_limit, coalesce((SELECT pr.free FROM pool_room pr), 0))
  )
  UPDATE jobs j
     SET state = 'RUNNING',
         attempt = j.attempt + 1,
         claimed_at = v_now,
         lease_owner = p_worker,
         lease_token = v_token,
         lease_until = least(v_now + q.lease_seconds * interval '1 second',
                             coalesce(j.deadline_at, 'infinity'),
                             v_now + q.max_runtime_s * interval '1 second'),
         heartbeat_at = NULL
    FROM picked, queues q
   WHERE j.id = picked.id AND q.id = j.queue_id
  RETURNING j.id, j.job_id, j.job_type, j.queue_id, j.tenant_id, j.payload, j.priority, j.idempotency_key,
            j.attempt, j.max_attempts, j.timeout_s, j.not_before, j.deadline_at, j.run_at, j.trace_id,
            j.created_at, j.contract_version, j.claimed_at, j.lease_token, j.lease_until,
            q.lease_seconds, q.backoff_base_ms, q.backoff_cap_ms, j.cancel_requested_at;
END
$$;

DROP INDEX finished_jobs_finished_at_idx;
DROP INDEX idempotency_keys_job_id_idx;
