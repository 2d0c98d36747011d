-- The live status stream's durable event log (issue 13): one row per job state change or progress
-- report, written by the statement-level AFTER triggers of packages/core/src/sql/routines/stream.sql
-- (never per row, never NOTIFY inside a trigger). Readers (core's stream reads, the API's StreamHub)
-- read in (xid, id) order and only rows with xid < pg_snapshot_xmin(pg_current_snapshot()): every row
-- they read belongs to a finished transaction and nothing older can still appear, so a cursor never
-- skips a late commit. Maintenance deletes rows older than one hour (core STREAM_RETENTION_MS).
--
-- failure: the raw error's code, class and message only (jobs.last_error on a retry,
-- finished_jobs.error on dead/expired); tenants see core's projection of it, applied at read time.
-- Stored here, not re-read from jobs/finished_jobs, because by the time a reader sees a
-- `job.retry_wait` event the job may have run again and overwritten last_error.
CREATE TABLE job_stream (
  id        bigint GENERATED ALWAYS AS IDENTITY,
  xid       xid8 NOT NULL DEFAULT pg_current_xact_id(),
  at        timestamptz(6) NOT NULL DEFAULT now(),
  job_id    uuid NOT NULL,
  tenant_id text NOT NULL,
  job_type  text NOT NULL,
  state     job_state NOT NULL,
  attempt   integer NOT NULL,
  kind      text NOT NULL CHECK (kind IN ('state', 'progress')),
  progress  jsonb,
  failure   jsonb
);
-- The one index, the primary key (each index is one more entry per event on the hot path): reads,
-- resume checks and retention all go in (xid, id) order — retention deletes from the oldest end
-- while rows are past the hour, so an event still in the log has every later event with it.
ALTER TABLE job_stream ADD CONSTRAINT job_stream_pkey PRIMARY KEY (xid, id);
