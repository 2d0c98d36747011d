-- Partitioned history (issue 16; migration 20261202002400_partitioned_history, docs/scaling.md
-- "Partitioned history"): finished_jobs is partitioned by RANGE on job_id, one partition per UTC
-- day of creation (job ids are UUIDv7), plus finished_jobs_default for what no range covers.
--
-- The maintenance leader runs as the runtime role, which owns nothing and may not create or drop
-- tables. The two routines that change partitions are SECURITY DEFINER: they run as the owner of
-- the schema (the migrator's role, which created them), do one fixed thing each, and take no
-- table or SQL from the caller — only the clock, which the runtime role could already use to
-- delete the same rows (it holds DELETE on finished_jobs). Partitions they create belong to the
-- owner, like every other table, and are reached through finished_jobs, whose grants cover them.
-- lock_timeout is short: DDL on the partitioned table waits for the acks in flight and makes new
-- ones wait behind it, so a partition that cannot be had at once is tried again on the next pass.

-- The smallest UUIDv7 of a millisecond: the partitions' bounds.
CREATE OR REPLACE FUNCTION porter_uuidv7_floor(p_at timestamptz) RETURNS uuid
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT (lpad(to_hex(floor(extract(epoch FROM p_at) * 1000)::bigint), 12, '0') || repeat('0', 20))::uuid
$$;

-- The time of a UUIDv7 (its first 48 bits, Unix milliseconds).
CREATE OR REPLACE FUNCTION porter_uuidv7_time(p_id uuid) RETURNS timestamptz
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT to_timestamp(('x' || lpad(left(replace(p_id::text, '-', ''), 12), 16, '0'))::bit(64)::bigint / 1000.0)
$$;

-- How long history is kept before its partition may be dropped, in seconds: the longest retention
-- of any queue, and at least one day (a partition's width). Queues with a shorter retention are
-- pruned row by row (core sql/prune-finished.ts), inside partitions that are dropped later anyway.
CREATE OR REPLACE FUNCTION porter_history_horizon_s() RETURNS integer
LANGUAGE sql STABLE AS $$
  SELECT greatest(coalesce((SELECT max(retention_s) FROM queues), 0), 86400)
$$;

-- The partitions of finished_jobs with their bounds (lo NULL for MINVALUE; both NULL for DEFAULT).
CREATE OR REPLACE FUNCTION porter_history_partitions()
RETURNS TABLE (name text, lo uuid, hi uuid, is_default boolean)
LANGUAGE sql STABLE AS $$
  SELECT c.relname::text,
         substring(b.expr FROM $re$FROM \('([0-9a-f-]+)'\)$re$)::uuid,
         substring(b.expr FROM $re$TO \('([0-9a-f-]+)'\)$re$)::uuid,
         b.expr = 'DEFAULT'
    FROM pg_inherits i
    JOIN pg_class c ON c.oid = i.inhrelid
    CROSS JOIN LATERAL (SELECT pg_get_expr(c.relpartbound, c.oid) AS expr) b
   WHERE i.inhparent = 'public.finished_jobs'::regclass
$$;

-- Creates the daily partitions missing up to p_days days after p_now, after the last one that
-- exists (never before it, and at most p_days back: older ranges stay in the default partition,
-- and a retired day is never made again). A day for which
-- the default partition already holds rows (an id made far ahead of time) is skipped, since
-- PostgreSQL refuses a partition whose rows sit in the default one; those jobs stay there.
-- Returns the names created.
CREATE OR REPLACE FUNCTION porter_history_ensure(p_now timestamptz, p_days integer DEFAULT 7)
RETURNS SETOF text
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp SET lock_timeout = '100ms' AS $$
DECLARE
  v_today timestamptz := date_trunc('day', p_now AT TIME ZONE 'UTC') AT TIME ZONE 'UTC';
  v_last timestamptz;
  v_day timestamptz;
  v_lo uuid;
  v_hi uuid;
  v_name text;
BEGIN
  SELECT porter_uuidv7_time(p.hi) INTO v_last FROM porter_history_partitions() p
   WHERE NOT p.is_default ORDER BY p.hi DESC LIMIT 1;
  -- From the end of the last day (filling a gap left while maintenance was down, at most p_days
  -- back), or today.
  v_day := greatest(coalesce(v_last, v_today), v_today - p_days * interval '1 day');
  WHILE v_day < p_now + p_days * interval '1 day' LOOP
    v_lo := porter_uuidv7_floor(v_day);
    v_hi := porter_uuidv7_floor(v_day + interval '1 day');
    v_name := 'finished_jobs_p' || to_char(v_day AT TIME ZONE 'UTC', 'YYYYMMDD');
    IF NOT EXISTS (SELECT 1 FROM finished_jobs_default d WHERE d.job_id >= v_lo AND d.job_id < v_hi) THEN
      BEGIN
        EXECUTE format('CREATE TABLE %I PARTITION OF finished_jobs FOR VALUES FROM (%L) TO (%L)', v_name, v_lo, v_hi);
        RETURN NEXT v_name;
      EXCEPTION WHEN lock_not_available THEN
        -- Readers or acks held the table: the next pass tries again.
        RETURN;
      END;
    END IF;
    v_day := v_day + interval '1 day';
  END LOOP;
END $$;

-- Retires the oldest partition whose every job was created before the horizon
-- (porter_history_horizon_s before p_now), if any: deletes the idempotency keys, attempts, events
-- and effects of the jobs it drops, detaches it, moves the rows still to keep into the default
-- partition — DEAD jobs (the dead-letter queue keeps them until redriven) and jobs that finished
-- within their queue's retention although created before the horizon — and drops it. One
-- partition per call; returns it with the rows dropped and kept (no row when nothing was due, or
-- when the table could not be locked at once: the next pass tries again).
CREATE OR REPLACE FUNCTION porter_history_retire(p_now timestamptz)
RETURNS TABLE (partition_name text, dropped bigint, kept bigint)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp SET lock_timeout = '100ms' AS $$
DECLARE
  v_cutoff uuid := porter_uuidv7_floor(p_now - porter_history_horizon_s() * interval '1 second');
  v_part text;
  v_total bigint;
  v_kept bigint;
  v_cols text;
  -- A row to keep: dead, or finished within its queue's retention (a queue gone: not kept).
  v_keep text := format(
    '(f.state = ''DEAD'' OR f.finished_at >= %L::timestamptz - coalesce((SELECT q.retention_s FROM queues q WHERE q.id = f.queue_id), 0) * interval ''1 second'')',
    p_now);
BEGIN
  SELECT p.name INTO v_part FROM porter_history_partitions() p
   WHERE NOT p.is_default AND p.hi <= v_cutoff ORDER BY p.hi LIMIT 1;
  IF v_part IS NULL THEN
    RETURN;
  END IF;
  -- The side tables first, before the partitioned table is locked: these deletes may take a
  -- while, the lock below only milliseconds. Should the lock not be had, they are done already
  -- and the next pass finds nothing left to delete (the jobs are past retention either way).
  EXECUTE format('DELETE FROM idempotency_keys k USING %I f WHERE (k.tenant_id, k.idempotency_key) = (f.tenant_id, f.idempotency_key) AND k.job_id = f.job_id AND NOT %s', v_part, v_keep);
  EXECUTE format('DELETE FROM job_attempts x USING %I f WHERE x.job_id = f.job_id AND NOT %s', v_part, v_keep);
  EXECUTE format('DELETE FROM job_events x USING %I f WHERE x.job_id = f.job_id AND NOT %s', v_part, v_keep);
  EXECUTE format('DELETE FROM job_effects x USING %I f WHERE x.job_id = f.job_id AND NOT %s', v_part, v_keep);
  BEGIN
    EXECUTE format('ALTER TABLE finished_jobs DETACH PARTITION %I', v_part);
  EXCEPTION WHEN lock_not_available THEN
    RETURN;
  END;
  -- Detached, its range belongs to the default partition: the rows to keep move there under the
  -- same job_id. A move, not an event: inserted into the partition itself, so the statement
  -- triggers of finished_jobs (DLQ counts, status stream, webhooks) do not see it, with the row
  -- triggers cloned onto the partition off for this statement (this transaction holds the
  -- partition's lock from the ALTER to the commit: no other writer sees them off).
  SELECT string_agg(quote_ident(a.attname), ', ' ORDER BY a.attnum) INTO v_cols
    FROM pg_attribute a WHERE a.attrelid = 'public.finished_jobs'::regclass AND a.attnum > 0 AND NOT a.attisdropped;
  EXECUTE format('SELECT count(*) FROM %I', v_part) INTO v_total;
  ALTER TABLE finished_jobs_default DISABLE TRIGGER USER;
  EXECUTE format('INSERT INTO finished_jobs_default (%s) SELECT %s FROM %I f WHERE %s',
                 v_cols, regexp_replace(v_cols, '([^, ]+)', 'f.\1', 'g'), v_part, v_keep);
  GET DIAGNOSTICS v_kept = ROW_COUNT;
  ALTER TABLE finished_jobs_default ENABLE TRIGGER USER;
  EXECUTE format('DROP TABLE %I', v_part);
  partition_name := v_part;
  dropped := v_total - v_kept;
  kept := v_kept;
  RETURN NEXT;
END $$;
