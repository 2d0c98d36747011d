-- Scheduling policy (docs/scheduling.md): weighted fair share between tenants, running quotas and
-- caps (tenant, queue, pool, resource key), token-bucket rate limits (tenant starts, resource
-- keys, tenant admission), adaptive resource-key concurrency on provider 429s, priority aging.

-- Weighted fair queuing: each job gets a virtual finish time at enqueue,
--   vft = max(tenant's last vft in the queue, queue's virtual clock) + k / weight,
-- and claims take jobs in (priority DESC, vft) order, one index scan per (queue, tenant).
ALTER TABLE jobs ADD COLUMN vft double precision NOT NULL DEFAULT 0;
-- The producer's priority once aging has raised `priority` (null: never aged).
ALTER TABLE jobs ADD COLUMN base_priority integer;
DROP INDEX jobs_claim_idx;
CREATE INDEX jobs_claim_idx ON jobs (queue_id, tenant_id, priority DESC, vft, id)
  WHERE state IN ('READY', 'RETRY_WAIT');

ALTER TABLE queues ADD COLUMN vclock double precision NOT NULL DEFAULT 0;
-- Over a tenant's admission limits: 'reject' (429 + Retry-After) or 'defer' (accepted at priority 0).
ALTER TABLE queues ADD COLUMN admission text NOT NULL DEFAULT 'reject' CHECK (admission IN ('reject', 'defer'));

-- Jobs started per second for the tenant (token bucket, burst = max(1, rate)); null = unlimited.
ALTER TABLE tenants ADD COLUMN start_rate_per_second double precision CHECK (start_rate_per_second > 0);

-- When the adaptive limit last moved (halved on a 429, raised by one while calm).
ALTER TABLE resource_keys ADD COLUMN adapted_at timestamptz(6);

-- Each (queue, tenant) that ever enqueued: its last virtual finish time. The claim probes the
-- tenants listed here for ready work.
CREATE TABLE fair_clocks (
  queue_id text NOT NULL,
  tenant_id text NOT NULL,
  last_vft double precision NOT NULL,
  PRIMARY KEY (queue_id, tenant_id)
);

-- Every (queue, tenant) with jobs gets its clock row, however the jobs were inserted (enqueue keeps
-- last_vft current; redrive, fixtures and bulk loads only need the row to exist).
CREATE FUNCTION porter_fair_clock_rows() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO fair_clocks (queue_id, tenant_id, last_vft)
  SELECT DISTINCT n.queue_id, n.tenant_id, 0 FROM new_rows n
  ON CONFLICT DO NOTHING;
  RETURN NULL;
END $$;
CREATE TRIGGER jobs_fair_clock_rows AFTER INSERT ON jobs REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION porter_fair_clock_rows();

-- Token buckets. scope: 'tenant_start' | 'resource' | 'tenant_admit'.
CREATE TABLE rate_buckets (
  scope text NOT NULL,
  key text NOT NULL,
  tokens double precision NOT NULL,
  updated_at timestamptz(6) NOT NULL,
  PRIMARY KEY (scope, key)
);

-- Tokens available now in a bucket that held `tokens` at `updated_at`, refilling at `rate` per
-- second up to `burst`. A missing bucket is full.
CREATE FUNCTION porter_tokens(p_tokens double precision, p_updated timestamptz, p_rate double precision,
                              p_burst double precision, p_now timestamptz)
RETURNS double precision LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN p_rate IS NULL THEN 'Infinity'::double precision
              WHEN p_tokens IS NULL THEN p_burst
              ELSE least(p_burst, p_tokens + greatest(0, extract(epoch FROM p_now - p_updated)) * p_rate) END
$$;

-- The claim, now with every limit. See packages/core/src/sql/claim-jobs.ts for the contract.
DROP FUNCTION porter_claim(text, text, integer, timestamptz);
CREATE FUNCTION porter_claim(p_pool text, p_worker text, p_limit integer, p_now timestamptz)
RETURNS TABLE (
  id bigint, job_id uuid, job_type text, queue_id text, tenant_id text, payload jsonb, priority integer,
  idempotency_key text, attempt integer, max_attempts integer, timeout_s integer, not_before timestamptz,
  deadline_at timestamptz, run_at timestamptz, trace_id text, created_at timestamptz, contract_version text,
  claimed_at timestamptz, lease_token bigint, lease_until timestamptz, lease_seconds integer,
  backoff_base_ms integer, backoff_cap_ms integer, cancel_requested_at timestamptz, resource_key_id text
) LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
  v_now timestamptz;
  v_token bigint;
BEGIN
  PERFORM set_config('synchronous_commit', 'off', true);
  -- Priority aging rewrites waiting rows of this pool's aging queues under this lock, taken
  -- exclusively (porter_age): a claim skipping the rows it holds would hand out lower-priority work,
  -- or nothing, while higher-priority work is ready. Claims share it, so they still run concurrently.
  -- Taken first, before the claim locks below (aging takes no other lock: no deadlock).
  IF EXISTS (SELECT 1 FROM queues q WHERE q.pool_id = p_pool AND q.aging_s IS NOT NULL) THEN
    PERFORM pg_advisory_xact_lock_shared(hashtext('porter.aging:' || p_pool));
  END IF;
  -- Count-then-claim must not race. Limits that span pools (tenant quotas and start rates,
  -- resource keys) take one global claim lock; caps local to the pool take the pool's lock; with
  -- no limit at all claims run concurrently (SKIP LOCKED keeps them apart). The statement below
  -- takes a new snapshot, so it sees every claim committed before the lock was granted.
  IF EXISTS (SELECT 1 FROM tenants t WHERE t.max_running IS NOT NULL OR t.start_rate_per_second IS NOT NULL)
     OR EXISTS (SELECT 1 FROM queues q JOIN resource_keys rk ON rk.id = q.resource_key_id
                 WHERE q.pool_id = p_pool
                   AND (rk.concurrency_limit IS NOT NULL OR rk.current_limit IS NOT NULL OR rk.rate_per_second IS NOT NULL)) THEN
    PERFORM pg_advisory_xact_lock(hashtext('porter.claim'));
  ELSIF EXISTS (SELECT 1 FROM pools p WHERE p.id = p_pool AND p.concurrency_cap IS NOT NULL)
     OR EXISTS (SELECT 1 FROM queues q WHERE q.pool_id = p_pool AND q.concurrency_cap IS NOT NULL AND NOT q.paused) THEN
    PERFORM pg_advisory_xact_lock(hashtext('porter.claim:' || p_pool));
  END IF;
  v_now := coalesce(p_now, clock_timestamp());
  v_token := nextval('lease_token_seq');

  RETURN QUERY
  WITH pool_room AS (
    SELECT CASE WHEN p.concurrency_cap IS NULL THEN p_limit
                ELSE least(p_limit, p.concurrency_cap - (SELECT count(*) FROM jobs r JOIN queues q ON q.id = r.queue_id
                                                         WHERE r.state = 'RUNNING' AND q.pool_id = p.id))::int
           END AS free
      FROM pools p WHERE p.id = p_pool
  ), rk_room AS (
    -- Resource keys: the adaptive limit (or the configured one) minus RUNNING jobs of every queue
    -- using the key, whatever its pool; and the key's start-rate tokens. Throttled keys: none.
    SELECT rk.id,
           CASE WHEN rk.throttled_until > v_now THEN 0
                ELSE least(
                  CASE WHEN rk.current_limit IS NULL AND rk.concurrency_limit IS NULL THEN p_limit
                       ELSE coalesce(least(rk.current_limit, rk.concurrency_limit), rk.current_limit, rk.concurrency_limit)
                            - (SELECT count(*) FROM jobs r JOIN queues q2 ON q2.id = r.queue_id
                                WHERE r.state = 'RUNNING' AND q2.resource_key_id = rk.id) END,
                  floor(porter_tokens(b.tokens, b.updated_at, rk.rate_per_second,
                                      coalesce(rk.burst, greatest(1, rk.rate_per_second)), v_now)))
           END::int AS free
      FROM resource_keys rk
      LEFT JOIN rate_buckets b ON b.scope = 'resource' AND b.key = rk.id
     WHERE rk.id IN (SELECT q.resource_key_id FROM queues q WHERE q.pool_id = p_pool)
  ), qs AS (
    SELECT q.id, q.resource_key_id,
           greatest(0, least(p_limit,
             CASE WHEN q.concurrency_cap IS NULL THEN p_limit
                  ELSE q.concurrency_cap - (SELECT count(*) FROM jobs r WHERE r.state = 'RUNNING' AND r.queue_id = q.id) END,
             coalesce((SELECT rr.free FROM rk_room rr WHERE rr.id = q.resource_key_id), p_limit)))::int AS free
      FROM queues q
     WHERE q.pool_id = p_pool AND NOT q.paused
  ), active AS (
    -- Tenants with claimable work in each queue that has room (one index probe each).
    SELECT qs.id AS queue_id, fc.tenant_id, t.weight, qs.free AS queue_free
      FROM qs
      JOIN fair_clocks fc ON fc.queue_id = qs.id
      JOIN tenants t ON t.id = fc.tenant_id
     WHERE qs.free > 0
       AND EXISTS (SELECT 1 FROM jobs j
                    WHERE j.queue_id = qs.id AND j.tenant_id = fc.tenant_id AND j.state IN ('READY', 'RETRY_WAIT')
                      AND j.run_at <= v_now AND (j.deadline_at IS NULL OR j.deadline_at > v_now))
  ), t_room AS (
    -- Tenant quota (RUNNING across all queues) and start-rate tokens.
    SELECT t.id,
           least(coalesce(t.max_running - (SELECT count(*) FROM jobs r WHERE r.state = 'RUNNING' AND r.tenant_id = t.id), p_limit),
                 floor(porter_tokens(b.tokens, b.updated_at, t.start_rate_per_second,
                                     greatest(1, t.start_rate_per_second), v_now)))::int AS free
      FROM tenants t
      LEFT JOIN rate_buckets b ON b.scope = 'tenant_start' AND b.key = t.id
     WHERE t.id IN (SELECT a.tenant_id FROM active a)
  ), cand AS (
    -- Per (queue, tenant): the best jobs in (priority DESC, vft) order, skipping locked rows, at most
    -- the room left and about twice the tenant's weighted share of this batch (the rest of its
    -- share comes in the next batch), so a claim locks few rows it will not take.
    SELECT c.id, c.queue_id, c.tenant_id, c.priority, c.vft
      FROM active a
      CROSS JOIN LATERAL (
        SELECT j.id, j.queue_id, j.tenant_id, j.priority, j.vft
          FROM jobs j
         WHERE j.queue_id = a.queue_id AND j.tenant_id = a.tenant_id
           AND j.state IN ('READY', 'RETRY_WAIT')
           AND j.run_at <= v_now
           AND (j.deadline_at IS NULL OR j.deadline_at > v_now)
         ORDER BY j.priority DESC, j.vft, j.id
         LIMIT greatest(0, least(a.queue_free,
                                 coalesce((SELECT tr.free FROM t_room tr WHERE tr.id = a.tenant_id), p_limit),
                                 2 * ceil(p_limit * a.weight::float8
                                          / (SELECT sum(a2.weight) FROM active a2 WHERE a2.queue_id = a.queue_id))::int + 1))
         FOR UPDATE SKIP LOCKED
      ) c
  ), ranked AS (
    SELECT cand.*, qs.resource_key_id,
           row_number() OVER (PARTITION BY cand.queue_id ORDER BY cand.priority DESC, cand.vft, cand.id) AS qn,
           row_number() OVER (PARTITION BY cand.tenant_id ORDER BY cand.priority DESC, cand.vft, cand.id) AS tn,
           row_number() OVER (PARTITION BY qs.resource_key_id ORDER BY cand.priority DESC, cand.vft, cand.id) AS rn
      FROM cand JOIN qs ON qs.id = cand.queue_id
  ), picked AS (
    SELECT r.id, r.vft
      FROM ranked r
      JOIN qs ON qs.id = r.queue_id
      LEFT JOIN t_room tr ON tr.id = r.tenant_id
      LEFT JOIN rk_room rr ON rr.id = r.resource_key_id
     WHERE r.qn <= qs.free
       AND (tr.free IS NULL OR r.tn <= tr.free)
       AND (r.resource_key_id IS NULL OR r.rn <= rr.free)
     ORDER BY r.priority DESC, r.vft, r.id
     LIMIT greatest(0, least(p_limit, coalesce((SELECT pr.free FROM pool_room pr), 0)))
  ), claimed AS (
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
    RETURNING j.*, q.lease_seconds, q.backoff_base_ms, q.backoff_cap_ms, q.resource_key_id AS rk_id
  ), clocks AS (
    -- The queue's virtual clock follows the work it hands out. Concurrent claimers skip a queue row
    -- another one is advancing (it only ever moves forward, so the other's advance suffices), so
    -- claimers never wait on each other here — no lock-order deadlock across a pool's queues.
    UPDATE queues q SET vclock = m.vft
      FROM (SELECT c.queue_id, max(c.vft) AS vft FROM claimed c GROUP BY c.queue_id) m
     WHERE q.id = m.queue_id AND q.vclock < m.vft
       AND q.id IN (SELECT q2.id FROM queues q2 WHERE q2.id IN (SELECT c.queue_id FROM claimed c) FOR UPDATE SKIP LOCKED)
  ), tenant_tokens AS (
    INSERT INTO rate_buckets (scope, key, tokens, updated_at)
    SELECT 'tenant_start', t.id,
           porter_tokens(b.tokens, b.updated_at, t.start_rate_per_second, greatest(1, t.start_rate_per_second), v_now) - n.n,
           v_now
      FROM (SELECT c.tenant_id, count(*) AS n FROM claimed c GROUP BY c.tenant_id) n
      JOIN tenants t ON t.id = n.tenant_id AND t.start_rate_per_second IS NOT NULL
      LEFT JOIN rate_buckets b ON b.scope = 'tenant_start' AND b.key = t.id
    ON CONFLICT (scope, key) DO UPDATE SET tokens = EXCLUDED.tokens, updated_at = EXCLUDED.updated_at
  ), resource_tokens AS (
    INSERT INTO rate_buckets (scope, key, tokens, updated_at)
    SELECT 'resource', rk.id,
           porter_tokens(b.tokens, b.updated_at, rk.rate_per_second, coalesce(rk.burst, greatest(1, rk.rate_per_second)), v_now) - n.n,
           v_now
      FROM (SELECT c.rk_id, count(*) AS n FROM claimed c WHERE c.rk_id IS NOT NULL GROUP BY c.rk_id) n
      JOIN resource_keys rk ON rk.id = n.rk_id AND rk.rate_per_second IS NOT NULL
      LEFT JOIN rate_buckets b ON b.scope = 'resource' AND b.key = rk.id
    ON CONFLICT (scope, key) DO UPDATE SET tokens = EXCLUDED.tokens, updated_at = EXCLUDED.updated_at
  )
  SELECT c.id, c.job_id, c.job_type, c.queue_id, c.tenant_id, c.payload, c.priority, c.idempotency_key,
         c.attempt, c.max_attempts, c.timeout_s, c.not_before, c.deadline_at, c.run_at, c.trace_id,
         c.created_at, c.contract_version, c.claimed_at, c.lease_token, c.lease_until,
         c.lease_seconds, c.backoff_base_ms, c.backoff_cap_ms, c.cancel_requested_at, c.rk_id
    FROM claimed c;
END
$$;

-- Priority aging (maintenance, queues with aging_s): the oldest waiting jobs below the top
-- priority, per queue, oldest first.
CREATE INDEX jobs_aging_idx ON jobs (queue_id, run_at) WHERE state IN ('READY', 'RETRY_WAIT') AND priority < 100;

-- One aging pass (packages/core/src/sql/age-priorities.ts for the rule), under the aging lock of
-- every pool with aging queues, exclusively: claims of those pools wait for the pass (a few ms)
-- instead of skipping the rows it has locked. The update runs as a new statement, after the locks.
CREATE FUNCTION porter_age(p_now timestamptz, p_batch integer) RETURNS bigint LANGUAGE plpgsql VOLATILE AS $$
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
