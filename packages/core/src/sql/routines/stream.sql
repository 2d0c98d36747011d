-- The live status stream's event log (issue 13), written as jobs change. A routine: this file is the
-- one source of the functions and triggers below, re-applied by the migrator whenever its checksum
-- changes. The table is in prisma/migrations/20261202000900_job_stream.
--
-- Statement-level AFTER triggers with transition tables (one INSERT … SELECT per statement, never a
-- per-row trigger, never NOTIFY: writers wake readers after their commit, core's StreamNotifier):
-- 1. INSERT on jobs (enqueue, redrive, a retry-now re-insert): one `state` event per row.
-- 2. UPDATE on jobs: a `state` event where state or attempt changed (claim → RUNNING, fail →
--    RETRY_WAIT, rescue, promote), else a `progress` event where progress changed (the lease
--    keeper's heartbeat, coalesced per heartbeat); a lease extension alone writes nothing.
-- 3. INSERT on finished_jobs: the terminal `state` event (SUCCEEDED, DEAD, CANCELLED, EXPIRED).
-- `failure` keeps the raw error's code, class and message only (projected for tenants when read).
CREATE OR REPLACE FUNCTION porter_stream_jobs_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO job_stream (job_id, tenant_id, job_type, state, attempt, kind, progress, failure)
  SELECT n.job_id, n.tenant_id, n.job_type, n.state, n.attempt, 'state', n.progress,
         CASE WHEN n.last_error IS NOT NULL AND n.state = 'RETRY_WAIT'
              THEN jsonb_build_object('code', n.last_error->'code', 'class', n.last_error->'class', 'message', n.last_error->'message') END
    FROM stream_new n ORDER BY n.id;
  RETURN NULL;
END $$;
CREATE OR REPLACE TRIGGER jobs_stream_insert AFTER INSERT ON jobs
  REFERENCING NEW TABLE AS stream_new FOR EACH STATEMENT EXECUTE FUNCTION porter_stream_jobs_insert();

CREATE OR REPLACE FUNCTION porter_stream_jobs_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO job_stream (job_id, tenant_id, job_type, state, attempt, kind, progress, failure)
  SELECT n.job_id, n.tenant_id, n.job_type, n.state, n.attempt,
         CASE WHEN n.state <> o.state OR n.attempt <> o.attempt THEN 'state' ELSE 'progress' END,
         n.progress,
         CASE WHEN (n.state <> o.state OR n.attempt <> o.attempt) AND n.state = 'RETRY_WAIT' AND n.last_error IS NOT NULL
              THEN jsonb_build_object('code', n.last_error->'code', 'class', n.last_error->'class', 'message', n.last_error->'message') END
    FROM stream_new n JOIN stream_old o ON o.id = n.id
   WHERE n.state <> o.state OR n.attempt <> o.attempt OR n.progress IS DISTINCT FROM o.progress
   ORDER BY n.id;
  RETURN NULL;
END $$;
CREATE OR REPLACE TRIGGER jobs_stream_update AFTER UPDATE ON jobs
  REFERENCING OLD TABLE AS stream_old NEW TABLE AS stream_new FOR EACH STATEMENT EXECUTE FUNCTION porter_stream_jobs_update();

CREATE OR REPLACE FUNCTION porter_stream_finished_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO job_stream (job_id, tenant_id, job_type, state, attempt, kind, progress, failure)
  SELECT n.job_id, n.tenant_id, n.job_type, n.state, n.attempt, 'state', n.progress,
         CASE WHEN n.error IS NOT NULL AND n.state IN ('DEAD', 'EXPIRED')
              THEN jsonb_build_object('code', n.error->'code', 'class', n.error->'class', 'message', n.error->'message') END
    FROM stream_new n ORDER BY n.id;
  RETURN NULL;
END $$;
CREATE OR REPLACE TRIGGER finished_jobs_stream_insert AFTER INSERT ON finished_jobs
  REFERENCING NEW TABLE AS stream_new FOR EACH STATEMENT EXECUTE FUNCTION porter_stream_finished_insert();
