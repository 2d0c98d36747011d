-- Cumulative flow totals behind the Prometheus counters and histograms (issue 14, deliverable 4;
-- docs/observability.md "Counters"). Never pruned. Maintenance adds to them the minute rollups of
-- every minute before `flow_totals_mark.absorbed_to` exactly once, in one transaction that also
-- moves the mark; a scrape reads totals + the minute rows at or after the mark in one snapshot, so a
-- counter only ever grows: neither the hour fold (which rewrites hour rows) nor pruning touch them.
-- Without the tenant: the counters are labelled by queue (and job type or code) only.
CREATE TABLE flow_totals (
  queue_id text NOT NULL,
  job_type text NOT NULL,
  arrivals bigint NOT NULL DEFAULT 0,
  starts bigint NOT NULL DEFAULT 0,
  succeeded bigint NOT NULL DEFAULT 0,
  retried bigint NOT NULL DEFAULT 0,
  dead bigint NOT NULL DEFAULT 0,
  cancelled bigint NOT NULL DEFAULT 0,
  expired bigint NOT NULL DEFAULT 0,
  lease_expiries bigint NOT NULL DEFAULT 0,
  throttles bigint NOT NULL DEFAULT 0,
  -- numeric: exact sums of the minute rows' float8 values (a float sum could round down by an ulp
  -- between scrapes, which Prometheus reads as a counter reset).
  wait_ms_sum numeric NOT NULL DEFAULT 0,
  runs bigint NOT NULL DEFAULT 0,
  run_ms_sum numeric NOT NULL DEFAULT 0,
  PRIMARY KEY (queue_id, job_type)
);

-- Wait ('w') and run ('r') histogram totals per queue, one row per non-empty log2-ms bucket.
CREATE TABLE flow_histogram_totals (
  queue_id text NOT NULL,
  kind text NOT NULL CHECK (kind IN ('w', 'r')),
  bucket integer NOT NULL CHECK (bucket BETWEEN 0 AND 28),
  n bigint NOT NULL,
  PRIMARY KEY (queue_id, kind, bucket)
);

-- Retry totals per queue and error code.
CREATE TABLE flow_retry_code_totals (
  queue_id text NOT NULL,
  code text NOT NULL,
  n bigint NOT NULL,
  PRIMARY KEY (queue_id, code)
);

-- One row: the totals hold every minute row with at < absorbed_to (as it was when absorbed).
CREATE TABLE flow_totals_mark (
  id boolean PRIMARY KEY DEFAULT true CHECK (id),
  absorbed_to timestamptz(6) NOT NULL
);
INSERT INTO flow_totals_mark (id, absorbed_to) VALUES (true, '-infinity');
