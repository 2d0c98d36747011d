-- Partitioned timeline (issue 16, deliverable 5; docs/scaling.md "Partitioned history"): job_attempts
-- and job_events are partitioned like finished_jobs (migration 20261202002400_partitioned_history):
-- by RANGE on job_id, one partition per UTC day of the job's creation, plus a default partition.
-- The routines of packages/core/src/sql/routines/partitions.sql create their days with
-- finished_jobs' and retire them in the same pass: a retired day's attempts and events go with a
-- DROP, not a DELETE. job_effects and idempotency_keys stay plain: their primary key,
-- (tenant_id, key), is the uniqueness ctx.effect and enqueue rely on, and a partitioned table's
-- unique keys must hold the partition key.
--
-- The primary keys become (job_id, id): a partitioned table's primary key must hold the partition
-- key. Every reader finds these rows by job_id (the job page, the timeline, the worker page joins
-- by it) and orders them by id: the new key serves both, so the separate (job_id) index goes.
--
-- The conversion moves no row: each old table is renamed and attached as the first partition
-- (every job created up to the next UTC midnight), its worker index attached as the partitioned
-- index's partition. The one thing proportional to the rows is the (job_id, id) unique index each
-- old table needs to be attached under the new primary key (docs/scaling.md has the time per
-- million rows); these tables take a row per failed attempt or exceptional transition, not one
-- per job.
--
-- The bigserial sequences stay (new rows keep their ids' order) and are made the partitioned
-- tables', so that dropping the first partition one day does not take them along.

-- job_attempts
ALTER TABLE job_attempts RENAME TO job_attempts_p_first;
CREATE UNIQUE INDEX job_attempts_p_first_pkey_new ON job_attempts_p_first (job_id, id);
ALTER TABLE job_attempts_p_first DROP CONSTRAINT job_attempts_pkey;
ALTER TABLE job_attempts_p_first ADD CONSTRAINT job_attempts_p_first_pkey PRIMARY KEY USING INDEX job_attempts_p_first_pkey_new;
DROP INDEX job_attempts_job_id_idx;
ALTER INDEX job_attempts_worker_idx RENAME TO job_attempts_p_first_worker_idx;

CREATE TABLE job_attempts (LIKE job_attempts_p_first INCLUDING DEFAULTS INCLUDING CONSTRAINTS) PARTITION BY RANGE (job_id);
ALTER TABLE job_attempts ADD CONSTRAINT job_attempts_pkey PRIMARY KEY (job_id, id);
CREATE INDEX job_attempts_worker_idx ON job_attempts (worker_id, finished_at DESC);
ALTER SEQUENCE job_attempts_id_seq OWNED BY job_attempts.id;

-- job_events
ALTER TABLE job_events RENAME TO job_events_p_first;
CREATE UNIQUE INDEX job_events_p_first_pkey_new ON job_events_p_first (job_id, id);
ALTER TABLE job_events_p_first DROP CONSTRAINT job_events_pkey;
ALTER TABLE job_events_p_first ADD CONSTRAINT job_events_p_first_pkey PRIMARY KEY USING INDEX job_events_p_first_pkey_new;
DROP INDEX job_events_job_id_idx;

CREATE TABLE job_events (LIKE job_events_p_first INCLUDING DEFAULTS INCLUDING CONSTRAINTS) PARTITION BY RANGE (job_id);
ALTER TABLE job_events ADD CONSTRAINT job_events_pkey PRIMARY KEY (job_id, id);
ALTER SEQUENCE job_events_id_seq OWNED BY job_events.id;

-- Attach, and the days ahead: the same days as finished_jobs' from the next UTC midnight (the first
-- partitions end there), eight of them; porter_history_ensure makes the later ones.
DO $$
DECLARE
  v_day timestamptz := date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' + interval '1 day';
  v_lo uuid;
  v_hi uuid;
  v_table text;
BEGIN
  FOREACH v_table IN ARRAY ARRAY['job_attempts', 'job_events'] LOOP
    v_hi := (lpad(to_hex(floor(extract(epoch FROM v_day) * 1000)::bigint), 12, '0') || repeat('0', 20))::uuid;
    EXECUTE format('ALTER TABLE %I ATTACH PARTITION %I FOR VALUES FROM (MINVALUE) TO (%L)', v_table, v_table || '_p_first', v_hi);
    FOR i IN 0..7 LOOP
      v_lo := v_hi;
      v_hi := (lpad(to_hex(floor(extract(epoch FROM v_day + (i + 1) * interval '1 day') * 1000)::bigint), 12, '0') || repeat('0', 20))::uuid;
      EXECUTE format('CREATE TABLE %I PARTITION OF %I FOR VALUES FROM (%L) TO (%L)',
                     v_table || '_p' || to_char((v_day + i * interval '1 day') AT TIME ZONE 'UTC', 'YYYYMMDD'), v_table, v_lo, v_hi);
    END LOOP;
    EXECUTE format('CREATE TABLE %I PARTITION OF %I DEFAULT', v_table || '_default', v_table);
    -- The old tables kept the runtime role's grants under their new names; partitions are reached
    -- through the partitioned table only (packages/db/src/grants.ts), so they hold none.
    EXECUTE (SELECT coalesce(string_agg(format('REVOKE ALL ON TABLE %I FROM %I;', v_table || '_p_first', g.grantee), ' '), '')
               FROM (SELECT DISTINCT grantee FROM information_schema.role_table_grants
                      WHERE table_schema = 'public' AND table_name = v_table || '_p_first' AND grantee <> 'PUBLIC'
                        AND grantee <> (SELECT pg_get_userbyid(c.relowner) FROM pg_class c WHERE c.oid = (v_table || '_p_first')::regclass)) g);
  END LOOP;
END $$;

-- The maintenance leader's progress through the retirement of one day (porter_history_retire):
-- the idempotency keys and effects of the jobs it drops are deleted a chunk at a time, over
-- several passes, before the day is dropped; this row says where the chunks are, and with which
-- clock and retentions the day's rows were judged, so that a row whose key was deleted is never
-- kept and a row kept never loses its key. Written only by that SECURITY DEFINER routine.
CREATE TABLE _porter_history_retirement (
  partition_name text PRIMARY KEY,
  started_at     timestamptz NOT NULL,
  -- queue id → retention_s when the retirement began.
  retentions     jsonb NOT NULL,
  -- The last finished_jobs.job_id whose key and effects were handled (NULL: none yet).
  cursor_id      uuid,
  keys_deleted   bigint NOT NULL DEFAULT 0
);
