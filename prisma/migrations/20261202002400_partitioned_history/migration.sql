-- Partitioned history (issue 16, deliverable 5; docs/scaling.md "Partitioned history"): finished_jobs
-- becomes a table partitioned by RANGE on job_id, one partition per UTC day of creation, so that
-- retention drops whole partitions (packages/core/src/sql/routines/partitions.sql) instead of
-- deleting rows one by one.
--
-- Why job_id and not finished_at: job_id stays the primary key (a partitioned table's primary key
-- must hold the partition key, and (job_id, finished_at) would let every reader that finds a job
-- by id — the job page, producer.get, the CLI, redrive, the DLQ — probe every partition); a lookup
-- by job_id is pruned to one partition, and the jobs browser's job_id order is the partitions'
-- order. Job ids are UUIDv7 (the first 48 bits are the Unix milliseconds of created_at), so a day's
-- bounds are two uuids: 'xxxxxxxxxxxx-0000-…' with the day's first millisecond in hex. The price
-- is that a partition holds the jobs *created* that day: a job that finished long after it was
-- created (retries, not_before, a redrive) is still retained by its finish time: retirement moves
-- such rows, and every DEAD row, into the default partition before it drops a partition.
--
-- The conversion is instant for any number of rows: the old table is renamed and attached as the
-- first partition (every job created up to the next UTC midnight), with its indexes attached as the
-- partitioned indexes' partitions (no rebuild). The attach reads the table once to check the range
-- (under this migration's lock): ~0.3 s per million rows on the development machine. New days get
-- partitions of their own: the next eight are created here, later ones ahead of time by the
-- maintenance leader (porter_history_ensure). The DEFAULT partition takes what no range covers (an
-- id far in the past or future, the rows kept past their partition's retirement), so an insert
-- never fails for want of a partition.
--
-- Triggers: the old table's triggers (routines dlq.sql, stream.sql, webhooks.sql) are dropped here
-- and created again on the partitioned table by those routine files, which changed with this
-- migration and so are re-applied after it.
DROP TRIGGER IF EXISTS finished_jobs_dlq_stamp ON finished_jobs;
DROP TRIGGER IF EXISTS finished_jobs_dlq_record ON finished_jobs;
DROP TRIGGER IF EXISTS finished_jobs_dlq_release ON finished_jobs;
DROP TRIGGER IF EXISTS finished_jobs_stream_insert ON finished_jobs;
DROP TRIGGER IF EXISTS finished_jobs_webhook_outbox ON finished_jobs;

ALTER TABLE finished_jobs RENAME TO finished_jobs_p_first;
ALTER TABLE finished_jobs_p_first RENAME CONSTRAINT finished_jobs_pkey TO finished_jobs_p_first_pkey;
ALTER INDEX finished_jobs_queue_id_state_finished_at_idx RENAME TO finished_jobs_p_first_queue_id_state_finished_at_idx;
ALTER INDEX finished_jobs_tenant_id_finished_at_idx RENAME TO finished_jobs_p_first_tenant_id_finished_at_idx;
ALTER INDEX finished_jobs_dlq_fingerprint_idx RENAME TO finished_jobs_p_first_dlq_fingerprint_idx;

-- Same columns in the same order, NOT NULLs, defaults and the state CHECK.
CREATE TABLE finished_jobs (LIKE finished_jobs_p_first INCLUDING DEFAULTS INCLUDING CONSTRAINTS) PARTITION BY RANGE (job_id);
ALTER TABLE finished_jobs ADD CONSTRAINT finished_jobs_pkey PRIMARY KEY (job_id);
CREATE INDEX finished_jobs_queue_id_state_finished_at_idx ON finished_jobs (queue_id, state, finished_at);
CREATE INDEX finished_jobs_tenant_id_finished_at_idx ON finished_jobs (tenant_id, finished_at);
CREATE INDEX finished_jobs_dlq_fingerprint_idx ON finished_jobs (dlq_fingerprint, finished_at)
  WHERE dlq_fingerprint IS NOT NULL;

DO $$
DECLARE
  -- The next UTC midnight: the first partition holds every job created before it.
  v_day timestamptz := date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' + interval '1 day';
  v_lo uuid;
  v_hi uuid;
BEGIN
  v_hi := (lpad(to_hex(floor(extract(epoch FROM v_day) * 1000)::bigint), 12, '0') || repeat('0', 20))::uuid;
  EXECUTE format('ALTER TABLE finished_jobs ATTACH PARTITION finished_jobs_p_first FOR VALUES FROM (MINVALUE) TO (%L)', v_hi);
  FOR i IN 0..7 LOOP
    v_lo := v_hi;
    v_hi := (lpad(to_hex(floor(extract(epoch FROM v_day + (i + 1) * interval '1 day') * 1000)::bigint), 12, '0') || repeat('0', 20))::uuid;
    EXECUTE format('CREATE TABLE %I PARTITION OF finished_jobs FOR VALUES FROM (%L) TO (%L)',
                   'finished_jobs_p' || to_char((v_day + i * interval '1 day') AT TIME ZONE 'UTC', 'YYYYMMDD'), v_lo, v_hi);
  END LOOP;
END $$;

CREATE TABLE finished_jobs_default PARTITION OF finished_jobs DEFAULT;
