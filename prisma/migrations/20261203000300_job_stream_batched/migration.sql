-- Issue 15, the cost of the status stream: one row of job_stream per statement, tenant and state,
-- with its jobs in arrays, in place of one row per job.
--
-- Every job wrote three events (enqueue, claim, finish), each a heap row and a `job_stream_pkey`
-- entry: ≈ 18k instructions per event in the ack, about a tenth of a claimed and acked job's
-- PostgreSQL instructions (docs/performance.md "The ack, counted"). A claim or an ack of 450 jobs
-- of one tenant now writes one row. The log's order is unchanged — (xid, id), then the place in
-- the row (`k`, 1-based) — and so is what readers get: core's stream/log.ts unnests the rows into
-- one event per job, its cursor is `<xid>-<id>-<k>` (a cursor of the old form `<xid>-<id>` is read
-- as after its whole row: every old row held one event).
--
-- The table is unlogged and keeps an hour; its rows are carried over, each as a row of one job.
ALTER TABLE job_stream
  ADD COLUMN job_ids uuid[],
  ADD COLUMN job_types text[],
  ADD COLUMN attempts integer[],
  ADD COLUMN progresses jsonb[],
  ADD COLUMN failures jsonb[];
UPDATE job_stream
   SET job_ids = ARRAY[job_id], job_types = ARRAY[job_type], attempts = ARRAY[attempt],
       progresses = ARRAY[progress], failures = ARRAY[failure];
-- The routines that write the old columns are replaced after the migrations (routines/stream.sql,
-- routines/claim.sql), in the same run of the migrator.
DROP TRIGGER IF EXISTS jobs_stream_insert ON jobs;
DROP TRIGGER IF EXISTS jobs_stream_update ON jobs;
DROP TRIGGER IF EXISTS finished_jobs_stream_insert ON finished_jobs;
ALTER TABLE job_stream
  DROP COLUMN job_id,
  DROP COLUMN job_type,
  DROP COLUMN attempt,
  DROP COLUMN progress,
  DROP COLUMN failure,
  ALTER COLUMN job_ids SET NOT NULL,
  ALTER COLUMN job_types SET NOT NULL,
  ALTER COLUMN attempts SET NOT NULL,
  ALTER COLUMN progresses SET NOT NULL,
  ALTER COLUMN failures SET NOT NULL,
  ADD CONSTRAINT job_stream_arrays_check CHECK (
    cardinality(job_ids) > 0 AND cardinality(job_types) = cardinality(job_ids) AND cardinality(attempts) = cardinality(job_ids)
    AND cardinality(progresses) = cardinality(job_ids) AND cardinality(failures) = cardinality(job_ids));
