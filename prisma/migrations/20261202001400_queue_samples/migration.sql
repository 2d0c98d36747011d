-- Queue samples (issue 14, deliverable 3; docs/observability.md "Console"): the gauges the flow
-- rollups cannot give — ready, running, oldest claimable age, backlog seconds — once a minute per
-- queue, so the console can chart them over time. Written by the maintenance leader (core
-- sql/queue-samples.ts) from the same computation as the signals (readSignals); idempotent on the
-- primary key (one row per minute and queue: a second leader pass in the minute inserts nothing).
-- Per queue only: a per-tenant ready count would be a count over the tenant's backlog.
-- Kept 8 days, pruned in batches from the old end of the primary key.
CREATE TABLE queue_samples (
  at timestamptz(6) NOT NULL,
  queue_id text NOT NULL,
  ready integer NOT NULL,
  -- ready hit the signals' bound (READY_COUNT_BOUND): the backlog is at least that.
  is_ready_lower_bound boolean NOT NULL DEFAULT false,
  running integer NOT NULL,
  effective_concurrency double precision NOT NULL,
  oldest_claimable_age_s double precision,
  backlog_s double precision,
  projected_wait_s double precision,
  is_at_risk boolean NOT NULL DEFAULT false,
  PRIMARY KEY (at, queue_id)
);
