-- Issue 15: the status stream's arrays stored without PostgreSQL's default compression attempt.
--
-- Since 20261203000300_job_stream_batched a job_stream row holds the events of one statement and
-- tenant: a claim or an ack of 450 jobs writes ~7 KB of job ids and ~6 KB of job types. Past the
-- TOAST threshold (2 KB) PostgreSQL first tries to compress each array with pglz, then moves it out
-- of line. Job ids (UUIDv7: a timestamp and random bits) barely compress, so the attempt is spent for
-- nothing; job types (one name repeated) compress to almost nothing, but pglz is slow at it.
-- - job_ids: STORAGE EXTERNAL, out of line without a compression attempt;
-- - the other arrays: lz4 (much faster than pglz, as small for these), where the server was built
--   with it; a server without lz4 keeps pglz.
-- Counted (bench/src/probe/claim-callgrind.ts ACKS=1, a claim of 450 and its acks of 150):
-- 253.0k → 239.1k instructions per claimed and acked job (−5.5%); EXTERNAL for every array 239.3k,
-- lz4 for every array 240.1k; the stream's whole trigger on finished_jobs costs 12.5k.
-- Existing rows keep their storage until rewritten (retention deletes them within the hour).
ALTER TABLE job_stream ALTER COLUMN job_ids SET STORAGE EXTERNAL;
DO $$
BEGIN
  ALTER TABLE job_stream ALTER COLUMN job_types SET COMPRESSION lz4;
  ALTER TABLE job_stream ALTER COLUMN attempts SET COMPRESSION lz4;
  ALTER TABLE job_stream ALTER COLUMN progresses SET COMPRESSION lz4;
  ALTER TABLE job_stream ALTER COLUMN failures SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported THEN
  RAISE NOTICE 'lz4 is not built into this server: job_stream keeps pglz';
END $$;
