-- The live status stream's event log (issue 13), written as jobs change. A routine: this file is the
-- one source of the functions and triggers below, re-applied by the migrator whenever its checksum
-- changes. The table is in prisma/migrations/20261202000900_job_stream.
--
-- Since migration 20261203000300_job_stream_batched a row holds the events of one statement for
-- one tenant and state: its jobs in arrays (job_ids, job_types, attempts, progresses, failures,
-- element k of each one job's event). A claim or an ack of 450 jobs of one tenant writes one row
-- and one index entry instead of 450 (docs/performance.md "The ack, counted"). Readers unnest the
-- rows (core's stream/log.ts): the log's order is (xid, id, k).
--
-- Never NOTIFY here: writers wake readers after their commit (core's StreamNotifier).
-- 1. INSERT on jobs (enqueue, redrive, a retry-now re-insert): `state` events, from a
--    statement-level trigger (a transition table, one INSERT … SELECT per statement).
-- 2. The claim (READY/RETRY_WAIT → RUNNING): written by the claim routine itself (claim.sql).
-- 3. Other UPDATEs of jobs: a row trigger on `UPDATE OF state, attempt, progress` whose WHEN clause
--    passes only a state change other than the claim's (fail → RETRY_WAIT, rescue, promote) — a
--    `state` event — or a changed progress (the lease keeper's heartbeat, coalesced per heartbeat) —
--    a `progress` event; a lease extension alone writes nothing. A row of one job each.
-- 4. INSERT on finished_jobs: the terminal `state` events (SUCCEEDED, DEAD, CANCELLED, EXPIRED),
--    statement-level like 1.
-- `failure` keeps the raw error's code, class and message only (projected for tenants when read).
-- No statement orders its events: one statement's events are of different jobs, and each job's own
-- events are ordered by their transactions (the log's (xid, id) order).
-- Since migration 20261202002400_partitioned_history finished_jobs is partitioned; its statement
-- trigger below is declared on the partitioned table and sees the rows of every partition.
CREATE OR REPLACE FUNCTION porter_stream_jobs_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO job_stream (tenant_id, state, kind, job_ids, job_types, attempts, progresses, failures)
  SELECT n.tenant_id, n.state, 'state', array_agg(n.job_id), array_agg(n.job_type), array_agg(n.attempt), array_agg(n.progress),
         array_agg(CASE WHEN n.last_error IS NOT NULL AND n.state = 'RETRY_WAIT'
                        THEN jsonb_build_object('code', n.last_error->'code', 'class', n.last_error->'class', 'message', n.last_error->'message') END)
    FROM stream_new n
   GROUP BY n.tenant_id, n.state;
  RETURN NULL;
END $$;
CREATE OR REPLACE TRIGGER jobs_stream_insert AFTER INSERT ON jobs
  REFERENCING NEW TABLE AS stream_new FOR EACH STATEMENT EXECUTE FUNCTION porter_stream_jobs_insert();

-- UPDATE of jobs: a row trigger on the three columns an event is about, filtered by its WHEN clause
-- before any function runs. `UPDATE OF` keeps the hot updates that set none of them (the prefetch
-- buffer's start marks, lease extensions without progress) from even considering it; the claim's
-- READY/RETRY_WAIT → RUNNING, the one hot transition, is excluded (the claim routine, claim.sql,
-- writes its RUNNING events itself, one INSERT … SELECT per claim); what is left is per row and
-- rare or bounded: a failure → RETRY_WAIT, a rescue, a promotion, a retry-now, and a heartbeat's
-- changed progress (at most one per running job per heartbeat). A statement-level trigger with
-- transition tables cost every jobs UPDATE its old and new rows (docs/performance.md).
DROP TRIGGER IF EXISTS jobs_stream_update ON jobs;
DROP FUNCTION IF EXISTS porter_stream_jobs_update();
CREATE OR REPLACE FUNCTION porter_stream_jobs_update_row() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO job_stream (tenant_id, state, kind, job_ids, job_types, attempts, progresses, failures)
  VALUES (NEW.tenant_id, NEW.state,
          CASE WHEN NEW.state <> OLD.state OR NEW.attempt <> OLD.attempt THEN 'state' ELSE 'progress' END,
          ARRAY[NEW.job_id], ARRAY[NEW.job_type], ARRAY[NEW.attempt], ARRAY[NEW.progress],
          ARRAY[CASE WHEN (NEW.state <> OLD.state OR NEW.attempt <> OLD.attempt) AND NEW.state = 'RETRY_WAIT' AND NEW.last_error IS NOT NULL
                     THEN jsonb_build_object('code', NEW.last_error->'code', 'class', NEW.last_error->'class', 'message', NEW.last_error->'message') END]);
  RETURN NULL;
END $$;
CREATE TRIGGER jobs_stream_update AFTER UPDATE OF state, attempt, progress ON jobs FOR EACH ROW
  WHEN (((NEW.state <> OLD.state OR NEW.attempt <> OLD.attempt) AND NEW.state <> 'RUNNING')
        OR (NEW.state = OLD.state AND NEW.attempt = OLD.attempt AND NEW.progress IS DISTINCT FROM OLD.progress))
  EXECUTE FUNCTION porter_stream_jobs_update_row();

CREATE OR REPLACE FUNCTION porter_stream_finished_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO job_stream (tenant_id, state, kind, job_ids, job_types, attempts, progresses, failures)
  SELECT n.tenant_id, n.state, 'state', array_agg(n.job_id), array_agg(n.job_type), array_agg(n.attempt), array_agg(n.progress),
         array_agg(CASE WHEN n.error IS NOT NULL AND n.state IN ('DEAD', 'EXPIRED')
                        THEN jsonb_build_object('code', n.error->'code', 'class', n.error->'class', 'message', n.error->'message') END)
    FROM stream_new n
   GROUP BY n.tenant_id, n.state;
  RETURN NULL;
END $$;
CREATE OR REPLACE TRIGGER finished_jobs_stream_insert AFTER INSERT ON finished_jobs
  REFERENCING NEW TABLE AS stream_new FOR EACH STATEMENT EXECUTE FUNCTION porter_stream_finished_insert();
