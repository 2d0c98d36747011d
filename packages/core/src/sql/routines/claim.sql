-- porter_claim: the claim, in one function call (packages/core/src/sql/claim-jobs.ts calls it and
-- decodes its rows; docs/scheduling.md describes the policy it enforces). A routine: this file is
-- the function's one source, re-applied by the migrator whenever its checksum changes
-- (packages/db/src/migrator.ts); packages/core/src/sql/routines/drift.int.test.ts fails when a
-- migrated database's function differs from it.
--
-- Why a function: one round trip instead of four (BEGIN, lock, claim, COMMIT), and PL/pgSQL caches
-- the statement plans per session (no re-plan per claim). `plan_cache_mode = force_generic_plan`
-- makes it keep them: left to choose, PL/pgSQL re-planned the claim statement at every call (its
-- custom plans looked cheaper than the generic one), about half of a 24-row claim
-- (docs/performance.md).
--
-- Shape:
-- * Locks first. The aging lock of the pool is taken shared (porter_age takes it exclusively:
--   aging.sql); then, when a limit applies, one claim lock so that count-then-claim cannot race:
--   limits that span pools (tenant quotas and start rates, resource keys) take the global
--   `porter.claim` lock, a pool cap the pool's lock, and queue caps alone the pool's lock only when
--   a capped queue has claimable work (else the claim leaves the capped queues alone and takes
--   none). The statement that follows takes a new snapshot (READ COMMITTED, VOLATILE function), so
--   it sees every claim committed before the lock was granted.
-- * Two statements: each path picks its rows (locked FOR UPDATE SKIP LOCKED, their ctids in claim
--   order), then one claim statement, shared by every path and by the ack's hand-over
--   (porter_claim_rows, porter_handover: both below), updates the picked row versions by ctid (no
--   second primary-key probe) and moves the queues' virtual clocks. The rows stay locked
--   by this transaction in between: nothing else can change them, and the claim's new snapshot sees
--   the versions picked.
-- * Three paths (v_path). 'fast': no cap, quota, rate or resource-key limit applies to the pool,
--   so the claim takes no lock and counts nothing; it skips the window ranking the limits need and
--   merges the per-(queue, tenant) scans of jobs_claim_idx directly. 'queues': only queue caps
--   apply (the demo's pools): the fast path's merge, with RUNNING counted and the candidates ranked
--   only for the capped queues (issue 15: the limited path cost 0.57× of the fast path's burn-down
--   for a pool with one capped queue). 'full': room per pool, resource key (adaptive limit, token
--   bucket), queue and tenant (quota, start-rate tokens); candidates per (queue, tenant) in
--   (priority DESC, vft) order, ranked per queue, tenant and resource key, cut to each room; the
--   token buckets (tokens.sql) are debited for the rows picked, in the same statement (the claim
--   takes every row picked).
-- * 'more' (fast and queues paths): an extra row like a bound when the claim came back short
--   because a tenant's scan stopped at its share of the batch — more may be claimable now.
-- * Bounds (queues and full paths): the concurrency limits whose room the claim used up while
--   claimable work of the pool stays behind come back as extra rows (job columns null, `bound`
--   'queue:<id>', 'pool:<id>', 'tenant:<id>' or 'resource_key:<id>'). A claim a cap cuts to zero
--   rows still names it, so the worker claims again when one of its own jobs under that limit
--   finishes (claim-loop.ts) rather than at the poll — and only then, not after every write.
-- * Weighted fair queuing: each job's virtual finish time (vft) is set at enqueue
--   (packages/core/src/sql/fair-clock.ts); claims take jobs in (priority DESC, vft) order, one
--   index scan per (queue, tenant) listed in fair_clocks.
-- * Both paths return only what a worker uses (the cancel request as a flag). The first p_start rows
--   (the worker's free slots) are marked started (jobs.started_at) in the claim itself; the others
--   wait in the worker's prefetch buffer and are marked by start-jobs.ts (an attempt rescued before
--   it started is not counted).
-- * The claim adds its starts and their wait's sum to the flow rollups (flow_rollups:
--   docs/observability.md "Rollups"), one row per (queue, job type, tenant) per claim. The wait
--   histogram is written where each attempt ends (ack, fail, rescue, hand-back: flow-write.ts), in
--   statements that write histogram rows anyway: one upsert fewer on the worker's serial claim path
--   (docs/performance.md "Flow rollups").
-- * Claims commit with the server's synchronous_commit (on by default): the rows are returned only
--   once the claim is flushed to WAL, so a claim a worker acts on is never forgotten in a crash (it
--   would hand the same lease token out twice).
--
-- Its signature changed twice (4 → 5 arguments): the migrator drops an overload this file no
-- longer creates. A change of the returned columns needs `DROP FUNCTION IF EXISTS` first (CREATE OR
-- REPLACE cannot change a return type): the returned columns changed when the claim began to
-- return the job's last checkpoint (20261202000700_progress), its traceparent
-- (20261202001200_traceparent), its bounds (`bound`, issue 15) and each row's place in claim order
-- (`claim_order`, issue 15: the rows come back unsorted), hence the DROPs below.
-- porter_claim_rows: the claim of rows already picked — locked FOR UPDATE by the calling transaction,
-- their ctids in claim order (p_tids) — for porter_claim's three paths and for porter_handover. One
-- lease token for the batch; the first p_start rows go straight into free slots (started now). The
-- rows are updated by their ctid (no second primary-key probe); the status stream's RUNNING events
-- and the flow rollups' starts are written; the queues' virtual clocks follow the work handed out.
DROP FUNCTION IF EXISTS porter_claim_rows(text, tid[], timestamptz, integer);
CREATE OR REPLACE FUNCTION porter_claim_rows(p_worker text, p_tids tid[], p_now timestamptz, p_start integer)
RETURNS TABLE (
  id bigint, job_id uuid, job_type text, queue_id text, tenant_id text, payload jsonb, priority integer,
  idempotency_key text, attempt integer, max_attempts integer, timeout_s integer, deadline_at timestamptz,
  trace_id text, created_at timestamptz, claimed_at timestamptz, lease_token bigint, lease_until timestamptz,
  lease_seconds integer, backoff_base_ms integer, backoff_cap_ms integer, cancel_requested boolean,
  resource_key_id text, started boolean, last_checkpoint jsonb, traceparent text, bound text, claim_order integer
) LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan AS $$
#variable_conflict use_column
DECLARE
  v_token bigint := nextval('lease_token_seq');
BEGIN
  RETURN QUERY
  WITH claimed AS (
    UPDATE jobs j
       SET state = 'RUNNING',
           attempt = j.attempt + 1,
           claimed_at = p_now,
           lease_owner = p_worker,
           lease_token = v_token,
           lease_until = least(p_now + q.lease_seconds * interval '1 second',
                               coalesce(j.deadline_at, 'infinity'),
                               p_now + q.max_runtime_s * interval '1 second'),
           heartbeat_at = NULL,
           progress = NULL, -- a new attempt starts without progress (its checkpoint stays)
           started_at = CASE WHEN picked.rn <= p_start THEN p_now END
      FROM unnest(p_tids) WITH ORDINALITY AS picked (tid, rn), queues q
     WHERE j.ctid = picked.tid AND q.id = j.queue_id
    RETURNING j.id, j.job_id, j.job_type, j.queue_id, j.tenant_id, j.payload, j.priority, j.idempotency_key,
              j.attempt, j.max_attempts, j.timeout_s, j.deadline_at, j.trace_id, j.created_at, j.claimed_at,
              j.lease_token, j.lease_until, j.cancel_requested_at, j.vft,
              q.lease_seconds, q.backoff_base_ms, q.backoff_cap_ms, q.resource_key_id AS rk_id, j.started_at, picked.rn,
              j.checkpoint, j.traceparent, j.run_at
  ), stream AS (
    -- The status stream's RUNNING events (routines/stream.sql: the claim writes its own, so no
    -- trigger has to look at every UPDATE of jobs): one row per tenant, its jobs in arrays. Not
    -- ordered: one claim's events are of different jobs, each job's own events stay in order (one
    -- per transaction here), and sorting 450 wide rows cost 1.8% of the claim
    -- (bench/src/probe/claim-callgrind.ts).
    INSERT INTO job_stream (tenant_id, state, kind, job_ids, job_types, attempts, progresses, failures)
    SELECT c.tenant_id, 'RUNNING', 'state', array_agg(c.job_id), array_agg(c.job_type), array_agg(c.attempt),
           array_agg(NULL::jsonb), array_agg(NULL::jsonb)
      FROM claimed c GROUP BY c.tenant_id
  ), flow AS (
    -- The flow rollups (packages/core/src/sql/flow-write.ts, which the other writers use: keep in
    -- step): the starts, one row per (queue, job type, tenant) of this claim, in key order, on this
    -- connection's shard — of the claims' half (0–7; every other writer uses 8–15), so a claim
    -- never waits on an ack's or a producer's row lock. The wait (its sum and its histogram) is
    -- added where the attempt ends (ack, fail, rescue, hand-back), from the claimed_at this sets.
    INSERT INTO flow_rollups (grain, at, queue_id, job_type, tenant_id, shard, starts)
    SELECT 1, date_trunc('minute', p_now), c.queue_id, c.job_type, c.tenant_id, (pg_backend_pid() % 8)::int, count(*)
      FROM claimed c
     GROUP BY c.queue_id, c.job_type, c.tenant_id
     ORDER BY c.queue_id, c.job_type, c.tenant_id
    ON CONFLICT (grain, at, queue_id, job_type, tenant_id, shard)
    DO UPDATE SET starts = flow_rollups.starts + EXCLUDED.starts
  ), advance AS (
    -- Per queue of the claim, the furthest virtual time handed out: the one scan of the claimed rows
    -- the clocks need (hashing every claimed row twice, as a semi-join did, cost 3.9% of the claim).
    SELECT c.queue_id, max(c.vft) AS vft FROM claimed c GROUP BY c.queue_id
  ), clocks AS (
    -- The queue's virtual clock follows the work it hands out. Concurrent claimers skip a queue row
    -- another one is advancing (it only ever moves forward, so the other's advance suffices), so
    -- claimers never wait on each other here — no lock-order deadlock across a pool's queues.
    UPDATE queues q SET vclock = a.vft
      FROM advance a
     WHERE q.id = a.queue_id AND q.vclock < a.vft
       AND q.id IN (SELECT q2.id FROM queues q2 JOIN advance a2 ON a2.queue_id = q2.id FOR UPDATE OF q2 SKIP LOCKED)
  )
  SELECT c.id, c.job_id, c.job_type, c.queue_id, c.tenant_id, c.payload, c.priority, c.idempotency_key,
         c.attempt, c.max_attempts, c.timeout_s, c.deadline_at, c.trace_id, c.created_at, c.claimed_at,
         c.lease_token, c.lease_until, c.lease_seconds, c.backoff_base_ms, c.backoff_cap_ms,
         c.cancel_requested_at IS NOT NULL, c.rk_id, c.started_at IS NOT NULL, c.checkpoint, c.traceparent, NULL::text,
         c.rn::integer
    FROM claimed c; -- in the join's order: the caller orders the rows by claim_order (a sort of these
                    -- wide rows here cost 3.8% of the claim; claim-jobs.ts's inClaimOrder costs µs)
END
$$;

DROP FUNCTION IF EXISTS porter_claim(text, text, integer, timestamptz, integer);
CREATE OR REPLACE FUNCTION porter_claim(p_pool text, p_worker text, p_limit integer, p_now timestamptz, p_start integer)
RETURNS TABLE (
  id bigint, job_id uuid, job_type text, queue_id text, tenant_id text, payload jsonb, priority integer,
  idempotency_key text, attempt integer, max_attempts integer, timeout_s integer, deadline_at timestamptz,
  trace_id text, created_at timestamptz, claimed_at timestamptz, lease_token bigint, lease_until timestamptz,
  lease_seconds integer, backoff_base_ms integer, backoff_cap_ms integer, cancel_requested boolean,
  resource_key_id text, started boolean, last_checkpoint jsonb, traceparent text, bound text, claim_order integer
) LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan AS $$
#variable_conflict use_column
DECLARE
  v_now timestamptz;
  -- 'fast': no limit applies to the pool; 'queues': only queue caps do; 'full': any other limit.
  v_path text;
  v_capped_locked boolean := false; -- queues path: the pool's lock is held, its capped queues may be claimed
  v_tids tid[]; -- the picked rows (locked by this transaction), in claim order
  v_full text[]; -- scopes (queue:, tenant:, pool:, resource_key:) whose room this claim used up
  v_bounds text[]; -- those of them with claimable work left behind: the claim's bounds
  v_scope text;
  v_kind text;
  v_key text;
  v_is_left boolean;
  v_more boolean := false; -- fast and queues paths: a tenant's scan stopped at its share (more may be claimable)
BEGIN
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
    v_path := 'full';
  ELSIF EXISTS (SELECT 1 FROM pools p WHERE p.id = p_pool AND p.concurrency_cap IS NOT NULL) THEN
    PERFORM pg_advisory_xact_lock(hashtext('porter.claim:' || p_pool));
    v_path := 'full';
  ELSIF EXISTS (SELECT 1 FROM queues q WHERE q.pool_id = p_pool AND q.concurrency_cap IS NOT NULL AND NOT q.paused) THEN
    -- Only queue caps: the pool's lock only when a capped queue has claimable work (one index probe
    -- each). Without the lock the claim leaves every capped queue alone — even work that appears in
    -- them before the pick's snapshot — so nothing it takes is counted against a cap. The lock is
    -- only tried: while another claimer holds it (it is counting and claiming the capped queues, and
    -- holds it through its commit's WAL flush) this one takes the uncapped queues' work at once
    -- instead of queueing behind it — with many worker processes on one pool, waiting claimers made
    -- the pool's claims one at a time (docs/scaling.md, 8 hosts: Lock:advisory the top wait).
    v_path := 'queues';
    v_now := coalesce(p_now, clock_timestamp());
    IF EXISTS (SELECT 1 FROM queues q
                CROSS JOIN LATERAL (SELECT 1 FROM jobs j
                                     WHERE j.queue_id = q.id AND j.state IN ('READY', 'RETRY_WAIT')
                                       AND j.run_at <= v_now AND (j.deadline_at IS NULL OR j.deadline_at > v_now)
                                     -- in jobs_claim_idx's order: the generic plan's estimate of a
                                     -- queue's rows (all queues alike) otherwise prefers a seq scan
                                     ORDER BY j.queue_id, j.tenant_id, j.priority DESC, j.vft, j.id
                                     LIMIT 1) w
                WHERE q.pool_id = p_pool AND q.concurrency_cap IS NOT NULL AND NOT q.paused) THEN
      v_capped_locked := pg_try_advisory_xact_lock(hashtext('porter.claim:' || p_pool));
    END IF;
  ELSE
    v_path := 'fast';
  END IF;
  v_now := coalesce(p_now, clock_timestamp()); -- after the locks: the pick's clock

  -- The pick: which rows, locked, in claim order (v_tids); the claim of them follows, for both paths.
  IF v_path = 'fast' THEN
    -- Fast path: no cap, quota, rate or resource-key limit applies to this pool: nothing to count,
    -- so no window ranking — per (queue, tenant with claimable work) the best jobs up to the
    -- tenant's weighted share of the batch, plus one (all of it when it is alone), merged in
    -- (priority DESC, vft) order. The same order as the limited path below. Each row scanned is
    -- locked, so a larger cut locks rows the claim does not take (twice the share, as before issue
    -- 15's policy pass, cost the policy configuration's pick ~40% more); a claim the shares cut
    -- short while a tenant had more says so ('more', below) and the worker claims again at once.
    WITH active AS (
      SELECT q.id AS queue_id, fc.tenant_id, t.weight
        FROM queues q
        JOIN fair_clocks fc ON fc.queue_id = q.id
        JOIN tenants t ON t.id = fc.tenant_id
        -- Claimable work of the (queue, tenant): one index probe in jobs_claim_idx's order. Not an
        -- EXISTS: the generic plan drops an EXISTS's ORDER BY and LIMIT and took a sequential scan
        -- of jobs (it expects a match among the first rows), which read the whole table for a
        -- tenant of fair_clocks with no claimable work: 1.0–2.3 s per claim at 1M ready
        -- (docs/performance.md "claim at depth"). The same in the two paths below.
        CROSS JOIN LATERAL (SELECT 1 FROM jobs j
                             WHERE j.queue_id = q.id AND j.tenant_id = fc.tenant_id AND j.state IN ('READY', 'RETRY_WAIT')
                               AND j.run_at <= v_now AND (j.deadline_at IS NULL OR j.deadline_at > v_now)
                             ORDER BY j.priority DESC, j.vft, j.id LIMIT 1) w
       WHERE q.pool_id = p_pool AND NOT q.paused
    ), shares AS (
      SELECT a.*, count(*) OVER () AS n, sum(a.weight) OVER () AS total FROM active a
    ), cand AS (
      SELECT c.ctid AS tid, c.id, c.priority, c.vft, s.queue_id, s.tenant_id, s.share
        FROM (SELECT sh.*, CASE WHEN sh.n = 1 THEN p_limit
                                ELSE least(p_limit, ceil(p_limit * sh.weight::float8 / sh.total)::int + 1) END AS share
                FROM shares sh) s
        CROSS JOIN LATERAL (
          SELECT j.ctid, j.id, j.priority, j.vft
            FROM jobs j
           WHERE j.queue_id = s.queue_id AND j.tenant_id = s.tenant_id
             AND j.state IN ('READY', 'RETRY_WAIT')
             AND j.run_at <= v_now
             AND (j.deadline_at IS NULL OR j.deadline_at > v_now)
           ORDER BY j.priority DESC, j.vft, j.id
           LIMIT s.share
           FOR UPDATE SKIP LOCKED
        ) c
    )
    SELECT (SELECT array_agg(p.tid ORDER BY p.priority DESC, p.vft, p.id)
              FROM (SELECT cand.* FROM cand ORDER BY cand.priority DESC, cand.vft, cand.id LIMIT p_limit) p),
           EXISTS (SELECT 1 FROM cand GROUP BY cand.queue_id, cand.tenant_id, cand.share HAVING count(*) >= cand.share)
      INTO v_tids, v_more;
  ELSIF v_path = 'queues' THEN
    -- Queue caps only: the fast path's merge, with the room counted and the candidates ranked only
    -- for the capped queues (and only under the pool's lock; without it they are left out). The
    -- uncapped queues' candidates go straight into the merge: nothing is counted for them.
    WITH qs AS (
      SELECT q.id, q.concurrency_cap IS NOT NULL AS is_capped,
             CASE WHEN q.concurrency_cap IS NULL THEN p_limit
                  ELSE greatest(0, least(p_limit, q.concurrency_cap
                         - (SELECT count(*) FROM jobs r WHERE r.state = 'RUNNING' AND r.queue_id = q.id)))::int END AS free
        FROM queues q
       WHERE q.pool_id = p_pool AND NOT q.paused AND (q.concurrency_cap IS NULL OR v_capped_locked)
    ), active AS (
      SELECT qs.id AS queue_id, qs.is_capped, qs.free, fc.tenant_id, t.weight
        FROM qs
        JOIN fair_clocks fc ON fc.queue_id = qs.id
        JOIN tenants t ON t.id = fc.tenant_id
        CROSS JOIN LATERAL (SELECT 1 FROM jobs j
                             WHERE j.queue_id = qs.id AND j.tenant_id = fc.tenant_id AND j.state IN ('READY', 'RETRY_WAIT')
                               AND j.run_at <= v_now AND (j.deadline_at IS NULL OR j.deadline_at > v_now)
                             ORDER BY j.priority DESC, j.vft, j.id LIMIT 1) w
       WHERE qs.free > 0
    ), shares AS (
      SELECT a.*, count(*) OVER () AS n, sum(a.weight) OVER () AS total FROM active a
    ), cand AS (
      SELECT c.ctid AS tid, c.id, c.priority, c.vft, s.queue_id, s.tenant_id, s.is_capped, s.free, s.share
        FROM (SELECT sh.*, CASE WHEN sh.n = 1 THEN p_limit
                                ELSE least(p_limit, ceil(p_limit * sh.weight::float8 / sh.total)::int + 1) END AS share
                FROM shares sh) s
        CROSS JOIN LATERAL (
          SELECT j.ctid, j.id, j.priority, j.vft
            FROM jobs j
           WHERE j.queue_id = s.queue_id AND j.tenant_id = s.tenant_id
             AND j.state IN ('READY', 'RETRY_WAIT')
             AND j.run_at <= v_now
             AND (j.deadline_at IS NULL OR j.deadline_at > v_now)
           ORDER BY j.priority DESC, j.vft, j.id
           LIMIT least(s.free, s.share)
           FOR UPDATE SKIP LOCKED
        ) c
    ), picked AS (
      -- Uncapped queues' candidates as they are; a capped queue's cut to its room.
      SELECT p.tid, p.id, p.priority, p.vft, p.queue_id
        FROM (SELECT cand.tid, cand.id, cand.priority, cand.vft, cand.queue_id FROM cand WHERE NOT cand.is_capped
              UNION ALL
              SELECT r.tid, r.id, r.priority, r.vft, r.queue_id
                FROM (SELECT cand.*, row_number() OVER (PARTITION BY cand.queue_id ORDER BY cand.priority DESC, cand.vft, cand.id) AS qn
                        FROM cand WHERE cand.is_capped) r
               WHERE r.qn <= r.free) p
       ORDER BY p.priority DESC, p.vft, p.id
       LIMIT p_limit
    )
    SELECT (SELECT array_agg(p.tid ORDER BY p.priority DESC, p.vft, p.id) FROM picked p),
           -- Capped queues whose room this claim used up (or found none of).
           (SELECT array_agg('queue:' || qs.id) FROM qs
             WHERE qs.is_capped AND qs.free < p_limit AND qs.free <= (SELECT count(*) FROM picked p WHERE p.queue_id = qs.id)),
           -- A tenant's scan stopped at its share of the batch (not at a cap's room).
           EXISTS (SELECT 1 FROM cand GROUP BY cand.queue_id, cand.tenant_id, cand.share HAVING count(*) >= cand.share)
      INTO v_tids, v_full, v_more;
  ELSE
    -- Limited path: the room left under every limit, candidates ranked and cut to each room; the
    -- token buckets are debited for the rows picked (the claim below takes all of them).
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
             -- The concurrency room alone (null: none, or throttled), for the claim's bounds.
             CASE WHEN (rk.throttled_until IS NULL OR rk.throttled_until <= v_now)
                       AND (rk.current_limit IS NOT NULL OR rk.concurrency_limit IS NOT NULL)
                  THEN coalesce(least(rk.current_limit, rk.concurrency_limit), rk.current_limit, rk.concurrency_limit)
                       - (SELECT count(*) FROM jobs r JOIN queues q2 ON q2.id = r.queue_id
                           WHERE r.state = 'RUNNING' AND q2.resource_key_id = rk.id) END AS conc_free,
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
      SELECT q.id, q.resource_key_id, q.cap_free,
             greatest(0, least(p_limit, coalesce(q.cap_free, p_limit),
               coalesce((SELECT rr.free FROM rk_room rr WHERE rr.id = q.resource_key_id), p_limit)))::int AS free
        FROM (SELECT q.id, q.resource_key_id,
                     CASE WHEN q.concurrency_cap IS NOT NULL
                          THEN q.concurrency_cap - (SELECT count(*) FROM jobs r WHERE r.state = 'RUNNING' AND r.queue_id = q.id) END AS cap_free
                FROM queues q
               WHERE q.pool_id = p_pool AND NOT q.paused) q
    ), active AS (
      -- Tenants with claimable work in each queue that has room (one index probe each).
      SELECT qs.id AS queue_id, fc.tenant_id, t.weight, qs.free AS queue_free
        FROM qs
        JOIN fair_clocks fc ON fc.queue_id = qs.id
        JOIN tenants t ON t.id = fc.tenant_id
        CROSS JOIN LATERAL (SELECT 1 FROM jobs j
                             WHERE j.queue_id = qs.id AND j.tenant_id = fc.tenant_id AND j.state IN ('READY', 'RETRY_WAIT')
                               AND j.run_at <= v_now AND (j.deadline_at IS NULL OR j.deadline_at > v_now)
                             ORDER BY j.priority DESC, j.vft, j.id LIMIT 1) w
       WHERE qs.free > 0
    ), t_room AS (
      -- Tenant quota (RUNNING across all queues) and start-rate tokens.
      SELECT t.id, t.quota_free,
             least(coalesce(t.quota_free, p_limit),
                   floor(porter_tokens(b.tokens, b.updated_at, t.start_rate_per_second,
                                       greatest(1, t.start_rate_per_second), v_now)))::int AS free
        FROM (SELECT t.id, t.start_rate_per_second,
                     CASE WHEN t.max_running IS NOT NULL
                          THEN t.max_running - (SELECT count(*) FROM jobs r WHERE r.state = 'RUNNING' AND r.tenant_id = t.id) END AS quota_free
                FROM tenants t
               WHERE t.id IN (SELECT a.tenant_id FROM active a)) t
        LEFT JOIN rate_buckets b ON b.scope = 'tenant_start' AND b.key = t.id
    ), cand AS (
      -- Per (queue, tenant): the best jobs in (priority DESC, vft) order, skipping locked rows, at most
      -- the room left and about twice the tenant's weighted share of this batch (the rest of its
      -- share comes in the next batch), so a claim locks few rows it will not take.
      SELECT c.ctid AS tid, c.id, c.queue_id, c.tenant_id, c.priority, c.vft
        FROM active a
        CROSS JOIN LATERAL (
          SELECT j.ctid, j.id, j.queue_id, j.tenant_id, j.priority, j.vft
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
      SELECT r.tid, r.id, r.queue_id, r.tenant_id, r.resource_key_id, r.priority, r.vft
        FROM ranked r
        JOIN qs ON qs.id = r.queue_id
        LEFT JOIN t_room tr ON tr.id = r.tenant_id
        LEFT JOIN rk_room rr ON rr.id = r.resource_key_id
       WHERE r.qn <= qs.free
         AND (tr.free IS NULL OR r.tn <= tr.free)
         AND (r.resource_key_id IS NULL OR r.rn <= rr.free)
       ORDER BY r.priority DESC, r.vft, r.id
       LIMIT greatest(0, least(p_limit, coalesce((SELECT pr.free FROM pool_room pr), 0)))
    ), tenant_tokens AS (
      INSERT INTO rate_buckets (scope, key, tokens, updated_at)
      SELECT 'tenant_start', t.id,
             porter_tokens(b.tokens, b.updated_at, t.start_rate_per_second, greatest(1, t.start_rate_per_second), v_now) - n.n,
             v_now
        FROM (SELECT p.tenant_id, count(*) AS n FROM picked p GROUP BY p.tenant_id) n
        JOIN tenants t ON t.id = n.tenant_id AND t.start_rate_per_second IS NOT NULL
        LEFT JOIN rate_buckets b ON b.scope = 'tenant_start' AND b.key = t.id
      ON CONFLICT (scope, key) DO UPDATE SET tokens = EXCLUDED.tokens, updated_at = EXCLUDED.updated_at
    ), resource_tokens AS (
      INSERT INTO rate_buckets (scope, key, tokens, updated_at)
      SELECT 'resource', rk.id,
             porter_tokens(b.tokens, b.updated_at, rk.rate_per_second, coalesce(rk.burst, greatest(1, rk.rate_per_second)), v_now) - n.n,
             v_now
        FROM (SELECT p.resource_key_id, count(*) AS n FROM picked p WHERE p.resource_key_id IS NOT NULL GROUP BY p.resource_key_id) n
        JOIN resource_keys rk ON rk.id = n.resource_key_id AND rk.rate_per_second IS NOT NULL
        LEFT JOIN rate_buckets b ON b.scope = 'resource' AND b.key = rk.id
      ON CONFLICT (scope, key) DO UPDATE SET tokens = EXCLUDED.tokens, updated_at = EXCLUDED.updated_at
    )
    SELECT (SELECT array_agg(p.tid ORDER BY p.priority DESC, p.vft, p.id) FROM picked p),
           -- The concurrency limits whose room this claim used up (or found none of): queue caps,
           -- the pool cap, tenant quotas, resource-key limits. Token buckets refill with time, not
           -- when jobs finish: they are not bounds.
           (SELECT array_agg(b.scope) FROM (
              SELECT 'queue:' || qs.id AS scope FROM qs
               WHERE qs.cap_free < p_limit AND qs.cap_free <= (SELECT count(*) FROM picked p WHERE p.queue_id = qs.id)
              UNION ALL
              SELECT 'pool:' || p_pool FROM pools po
               WHERE po.id = p_pool AND po.concurrency_cap IS NOT NULL
                 AND (SELECT pr.free FROM pool_room pr) < p_limit
                 AND (SELECT pr.free FROM pool_room pr) <= (SELECT count(*) FROM picked p)
              UNION ALL
              SELECT 'tenant:' || tr.id FROM t_room tr
               WHERE tr.quota_free < p_limit AND tr.quota_free <= (SELECT count(*) FROM picked p WHERE p.tenant_id = tr.id)
              UNION ALL
              SELECT 'resource_key:' || rr.id FROM rk_room rr
               WHERE rr.conc_free < p_limit AND rr.conc_free <= (SELECT count(*) FROM picked p WHERE p.resource_key_id = rr.id)) b)
      INTO v_tids, v_full;
  END IF;

  -- The claim's bounds: of the limits this claim used up, those that leave claimable work of this
  -- pool behind (one index probe each, past the rows just picked). A worker claims again when one
  -- of its jobs under such a limit finishes (apps/worker/src/runtime/claim-loop.ts): that freed room
  -- no notification announces.
  IF v_full IS NOT NULL THEN
    FOREACH v_scope IN ARRAY v_full LOOP
      v_kind := split_part(v_scope, ':', 1);
      v_key := substr(v_scope, length(v_kind) + 2);
      -- One statement per kind, so each probe is an index scan on its own key: a LIMIT 1 in
      -- jobs_claim_idx's order inside a subquery of FROM (an EXISTS drops its own ORDER BY and
      -- LIMIT, and its generic plan may then scan jobs sequentially, as the pick's probes did).
      v_is_left := CASE v_kind
           WHEN 'queue' THEN EXISTS (
             SELECT 1 FROM (SELECT 1 FROM jobs j
                             WHERE j.queue_id = v_key AND j.state IN ('READY', 'RETRY_WAIT') AND j.run_at <= v_now
                               AND (j.deadline_at IS NULL OR j.deadline_at > v_now) AND j.ctid <> ALL (coalesce(v_tids, '{}'))
                             ORDER BY j.queue_id, j.tenant_id, j.priority DESC, j.vft, j.id LIMIT 1) w)
           WHEN 'tenant' THEN EXISTS (
             SELECT 1 FROM queues q
              CROSS JOIN LATERAL (SELECT 1 FROM jobs j
                                   WHERE j.queue_id = q.id AND j.tenant_id = v_key AND j.state IN ('READY', 'RETRY_WAIT')
                                     AND j.run_at <= v_now AND (j.deadline_at IS NULL OR j.deadline_at > v_now)
                                     AND j.ctid <> ALL (coalesce(v_tids, '{}'))
                                   ORDER BY j.priority DESC, j.vft, j.id LIMIT 1) w
              WHERE q.pool_id = p_pool AND NOT q.paused)
           WHEN 'resource_key' THEN EXISTS (
             SELECT 1 FROM queues q
              CROSS JOIN LATERAL (SELECT 1 FROM jobs j
                                   WHERE j.queue_id = q.id AND j.state IN ('READY', 'RETRY_WAIT')
                                     AND j.run_at <= v_now AND (j.deadline_at IS NULL OR j.deadline_at > v_now)
                                     AND j.ctid <> ALL (coalesce(v_tids, '{}'))
                                   ORDER BY j.queue_id, j.tenant_id, j.priority DESC, j.vft, j.id LIMIT 1) w
              WHERE q.pool_id = p_pool AND NOT q.paused AND q.resource_key_id = v_key)
           ELSE EXISTS (
             SELECT 1 FROM queues q
              CROSS JOIN LATERAL (SELECT 1 FROM jobs j
                                   WHERE j.queue_id = q.id AND j.state IN ('READY', 'RETRY_WAIT')
                                     AND j.run_at <= v_now AND (j.deadline_at IS NULL OR j.deadline_at > v_now)
                                     AND j.ctid <> ALL (coalesce(v_tids, '{}'))
                                   ORDER BY j.queue_id, j.tenant_id, j.priority DESC, j.vft, j.id LIMIT 1) w
              WHERE q.pool_id = p_pool AND NOT q.paused)
         END;
      IF v_is_left THEN
        v_bounds := v_bounds || v_scope;
      END IF;
    END LOOP;
  END IF;
  -- A claim cut short by the tenants' shares rather than by the work: 'more' (not a limit), so the
  -- worker claims again at once instead of taking the short claim for an empty pool.
  IF v_more AND coalesce(cardinality(v_tids), 0) < p_limit THEN
    v_bounds := v_bounds || 'more'::text;
  END IF;
  IF v_bounds IS NOT NULL THEN
    RETURN QUERY SELECT NULL::bigint, NULL::uuid, NULL::text, NULL::text, NULL::text, NULL::jsonb, NULL::integer,
                        NULL::text, NULL::integer, NULL::integer, NULL::integer, NULL::timestamptz, NULL::text,
                        NULL::timestamptz, NULL::timestamptz, NULL::bigint, NULL::timestamptz, NULL::integer,
                        NULL::integer, NULL::integer, NULL::boolean, NULL::text, NULL::boolean, NULL::jsonb,
                        NULL::text, b.scope, NULL::integer
                   FROM unnest(v_bounds) AS b (scope);
  END IF;
  IF v_tids IS NULL THEN
    RETURN; -- nothing claimable
  END IF;

  -- The claim of the picked rows, shared with the hand-over (porter_claim_rows, below).
  RETURN QUERY SELECT * FROM porter_claim_rows(p_worker, v_tids, v_now, p_start);
END
$$;

-- porter_handover: a worker's finished jobs of a capped queue hand their room to the queue's next
-- jobs, in the ack's own statement (packages/core/src/sql/complete-jobs.ts, `handover`): one round
-- trip and one commit per round of a capped queue instead of two (the ack, then a claim that counts
-- under the pool's lock; docs/performance.md "the capped queue's round"). p_freed names the queue
-- of each job the calling statement has just taken out of RUNNING (its fenced ack); per queue, at
-- most that many of its claimable jobs are claimed for p_worker (p_limit in all, the first p_start
-- marked started: the worker's free slots it reserved for them), in the claim's order across the
-- queue's tenants.
--
-- Why no lock and no count against the pool's claims: a hand-over never adds to a queue's RUNNING
-- count, since it takes at most as many as the same transaction took out, and a claim counting
-- under the pool's lock either sees the finished rows still RUNNING (it counts them; their
-- successors are locked or already changed, so it skips them) or sees the hand-over committed
-- (the count is the same). It also takes no more than the cap leaves now (cap − RUNNING as its
-- own statements see it), so a cap lowered while jobs run still takes effect as they finish.
-- Only for limits a hand-over within one queue leaves unchanged: queue caps and the pool's cap.
-- Tenant quotas and start rates (the successor may be another tenant's; its start needs a token)
-- and resource-key limits (adaptive or rated) decline: the worker's claim loop claims instead.
DROP FUNCTION IF EXISTS porter_handover(text, text, text[], integer, timestamptz);
CREATE OR REPLACE FUNCTION porter_handover(p_pool text, p_worker text, p_freed text[], p_limit integer, p_now timestamptz,
                                           p_start integer)
RETURNS TABLE (
  id bigint, job_id uuid, job_type text, queue_id text, tenant_id text, payload jsonb, priority integer,
  idempotency_key text, attempt integer, max_attempts integer, timeout_s integer, deadline_at timestamptz,
  trace_id text, created_at timestamptz, claimed_at timestamptz, lease_token bigint, lease_until timestamptz,
  lease_seconds integer, backoff_base_ms integer, backoff_cap_ms integer, cancel_requested boolean,
  resource_key_id text, started boolean, last_checkpoint jsonb, traceparent text, bound text, claim_order integer
) LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan AS $$
#variable_conflict use_column
DECLARE
  v_now timestamptz;
  v_tids tid[];
BEGIN
  IF p_freed IS NULL OR cardinality(p_freed) = 0 OR p_limit IS NULL OR p_limit <= 0 THEN
    RETURN;
  END IF;
  IF EXISTS (SELECT 1 FROM tenants t WHERE t.max_running IS NOT NULL OR t.start_rate_per_second IS NOT NULL)
     OR EXISTS (SELECT 1 FROM queues q JOIN resource_keys rk ON rk.id = q.resource_key_id
                 WHERE q.id = ANY (p_freed)
                   AND (rk.concurrency_limit IS NOT NULL OR rk.current_limit IS NOT NULL OR rk.rate_per_second IS NOT NULL
                        OR rk.throttled_until IS NOT NULL)) THEN
    RETURN;
  END IF;
  -- Priority aging's lock, shared, as every claim takes it (porter_claim).
  IF EXISTS (SELECT 1 FROM queues q WHERE q.pool_id = p_pool AND q.aging_s IS NOT NULL) THEN
    PERFORM pg_advisory_xact_lock_shared(hashtext('porter.aging:' || p_pool));
  END IF;
  v_now := coalesce(p_now, clock_timestamp());
  WITH freed AS (
    -- Per capped, unpaused queue of the pool: the room to hand over — no more than was freed, nor
    -- than the cap leaves now.
    SELECT q.id, least(f.n, q.concurrency_cap
                              - (SELECT count(*) FROM jobs r WHERE r.state = 'RUNNING' AND r.queue_id = q.id))::int AS n
      FROM (SELECT u.queue_id, count(*) AS n FROM unnest(p_freed) AS u (queue_id) GROUP BY u.queue_id) f
      JOIN queues q ON q.id = f.queue_id
     WHERE q.pool_id = p_pool AND q.concurrency_cap IS NOT NULL AND NOT q.paused
  ), cand AS (
    -- Per (queue, tenant with a fair clock): its best jobs, as many as the queue's room, merged below
    -- in the claim's order (priority DESC, vft).
    SELECT c.ctid AS tid, c.id, c.priority, c.vft, f.id AS queue_id, f.n
      FROM freed f
      JOIN fair_clocks fc ON fc.queue_id = f.id
      CROSS JOIN LATERAL (
        SELECT j.ctid, j.id, j.priority, j.vft
          FROM jobs j
         WHERE j.queue_id = f.id AND j.tenant_id = fc.tenant_id
           AND j.state IN ('READY', 'RETRY_WAIT')
           AND j.run_at <= v_now
           AND (j.deadline_at IS NULL OR j.deadline_at > v_now)
         ORDER BY j.priority DESC, j.vft, j.id
         LIMIT greatest(f.n, 0)
         FOR UPDATE SKIP LOCKED
      ) c
     WHERE f.n > 0
  ), picked AS (
    SELECT r.tid, r.id, r.priority, r.vft
      FROM (SELECT cand.*, row_number() OVER (PARTITION BY cand.queue_id ORDER BY cand.priority DESC, cand.vft, cand.id) AS qn
              FROM cand) r
     WHERE r.qn <= r.n
     ORDER BY r.priority DESC, r.vft, r.id
     LIMIT p_limit
  )
  SELECT array_agg(p.tid ORDER BY p.priority DESC, p.vft, p.id) INTO v_tids FROM picked p;
  IF v_tids IS NULL THEN
    RETURN;
  END IF;
  RETURN QUERY SELECT * FROM porter_claim_rows(p_worker, v_tids, v_now, p_start);
END
$$;
