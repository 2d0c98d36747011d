-- Fewer indexes on finished_jobs: every ack inserts one row here, and each index is one more
-- entry to write (and WAL to log) per finished job. Five become three.
--
-- * The primary key moves from the row id to job_id. The public id was already unique here (its
--   own index) and it is how every reader finds a finished job; the bigint id is only carried so
--   that a redrive puts the row back into `jobs` under its id, and nothing looks a finished job
--   up by it. The existing unique index becomes the primary key (no rebuild); the column stays
--   NOT NULL.
-- * finished_jobs_created_at_id_idx goes: job ids are UUIDv7 (48-bit Unix milliseconds first,
--   taken from the same clock reading that becomes created_at), so job_id order is creation
--   order and the console's jobs browser pages both tables by job_id DESC instead, on this
--   primary key here and on jobs_job_id_key in the hot table.
-- * (queue_id, state, finished_at) (retention, per-queue recent completions) and
--   (tenant_id, finished_at) stay.
ALTER TABLE finished_jobs DROP CONSTRAINT finished_jobs_pkey;
ALTER TABLE finished_jobs ADD CONSTRAINT finished_jobs_pkey PRIMARY KEY USING INDEX finished_jobs_job_id_key;
DROP INDEX finished_jobs_created_at_id_idx;
