-- Flow rollups (issue 14, deliverables 1 and 2; docs/observability.md "Rollups"). Written by the
-- statements that already touch each job (enqueue, the claim, the completer's ack and fail batches,
-- rescue, expiry, cancel) as one more aggregated INSERT … ON CONFLICT DO UPDATE in the same
-- statement: one row per (minute, queue, job type, tenant, shard) per statement, never per job.
--
-- grain: 1 = a minute (`at` is the minute's start; kept 14 days), 60 = an hour (`at` the hour's
-- start, folded by maintenance from the minutes of completed hours, shard 0; kept 90 days).
-- shard: pg_backend_pid() % 16 of the writing connection, so concurrent writers (a worker's claim
-- and its completer's ack run on different connections) rarely share a row lock inside their
-- transactions; readers sum over shards. The primary key leads with (grain, at): window reads and
-- pruning are range scans of it.
CREATE TABLE flow_rollups (
  grain integer NOT NULL CHECK (grain IN (1, 60)),
  at timestamptz(6) NOT NULL,
  queue_id text NOT NULL,
  job_type text NOT NULL,
  tenant_id text NOT NULL,
  shard integer NOT NULL,
  arrivals bigint NOT NULL DEFAULT 0,
  starts bigint NOT NULL DEFAULT 0,
  succeeded bigint NOT NULL DEFAULT 0,
  retried bigint NOT NULL DEFAULT 0,
  dead bigint NOT NULL DEFAULT 0,
  cancelled bigint NOT NULL DEFAULT 0,
  expired bigint NOT NULL DEFAULT 0,
  lease_expiries bigint NOT NULL DEFAULT 0,
  throttles bigint NOT NULL DEFAULT 0,
  -- Sums for means: wait over `starts`, run time over `runs` (attempts that ended after starting).
  wait_ms_sum double precision NOT NULL DEFAULT 0,
  runs bigint NOT NULL DEFAULT 0,
  run_ms_sum double precision NOT NULL DEFAULT 0,
  PRIMARY KEY (grain, at, queue_id, job_type, tenant_id, shard)
) WITH (fillfactor = 70); -- the upserts change no indexed column: HOT updates with room on the page

-- Wait (kind 'w': ready → claim) and run (kind 'r': start → end) histograms, one row per non-empty
-- bucket: bucket 0 is < 1 ms, bucket k (1..27) is [2^(k-1), 2^k) ms, bucket 28 is ≥ 2^27 ms (~37 h).
CREATE TABLE flow_histograms (
  grain integer NOT NULL CHECK (grain IN (1, 60)),
  at timestamptz(6) NOT NULL,
  queue_id text NOT NULL,
  job_type text NOT NULL,
  tenant_id text NOT NULL,
  shard integer NOT NULL,
  kind text NOT NULL CHECK (kind IN ('w', 'r')),
  bucket integer NOT NULL CHECK (bucket BETWEEN 0 AND 28),
  n bigint NOT NULL,
  PRIMARY KEY (grain, at, queue_id, job_type, tenant_id, shard, kind, bucket)
) WITH (fillfactor = 70);

-- Retries (failed → RETRY_WAIT) by the structured error's code.
CREATE TABLE flow_retry_codes (
  grain integer NOT NULL CHECK (grain IN (1, 60)),
  at timestamptz(6) NOT NULL,
  queue_id text NOT NULL,
  job_type text NOT NULL,
  tenant_id text NOT NULL,
  shard integer NOT NULL,
  code text NOT NULL,
  n bigint NOT NULL,
  PRIMARY KEY (grain, at, queue_id, job_type, tenant_id, shard, code)
) WITH (fillfactor = 70);

-- A queue's wait target: a queue whose projected wait exceeds it is "at risk" (signals).
ALTER TABLE queues ADD COLUMN target_wait_s integer CHECK (target_wait_s > 0);
