-- Partitioned history (issue 16; migrations 20261202002400_partitioned_history and
-- 20261202003000_partitioned_timeline, docs/scaling.md "Partitioned history"): finished_jobs and
-- the timeline tables job_attempts and job_events are partitioned by RANGE on job_id, one
-- partition per UTC day of creation (job ids are UUIDv7), plus <table>_default for what no range
-- covers. The routines below make and retire the three tables' days together.
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

-- The partitions of a history table with their bounds (lo NULL for MINVALUE; both NULL for DEFAULT).
CREATE OR REPLACE FUNCTION porter_history_partitions(p_table regclass DEFAULT 'public.finished_jobs')
RETURNS TABLE (name text, lo uuid, hi uuid, is_default boolean)
LANGUAGE sql STABLE AS $$
  SELECT c.relname::text,
         substring(b.expr FROM $re$FROM \('([0-9a-f-]+)'\)$re$)::uuid,
         substring(b.expr FROM $re$TO \('([0-9a-f-]+)'\)$re$)::uuid,
         b.expr = 'DEFAULT'
    FROM pg_inherits i
    JOIN pg_class c ON c.oid = i.inhrelid
    CROSS JOIN LATERAL (SELECT pg_get_expr(c.relpartbound, c.oid) AS expr) b
   WHERE i.inhparent = p_table
$$;

-- Creates, for finished_jobs, job_attempts and job_events, the daily partitions missing up to
-- p_days days after p_now, after the table's last one (never before it, and at most p_days back:
-- older ranges stay in the default partition, and a retired day is never made again). A day for
-- which a table's default partition already holds rows (an id made far ahead of time) is skipped
-- for that table, since PostgreSQL refuses a partition whose rows sit in the default one; those
-- rows stay there. Returns the names created.
CREATE OR REPLACE FUNCTION porter_history_ensure(p_now timestamptz, p_days integer DEFAULT 7)
RETURNS SETOF text
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp SET lock_timeout = '100ms' AS $$
DECLARE
  v_today timestamptz := date_trunc('day', p_now AT TIME ZONE 'UTC') AT TIME ZONE 'UTC';
  v_table text;
  v_last timestamptz;
  v_day timestamptz;
  v_lo uuid;
  v_hi uuid;
  v_name text;
  v_taken boolean;
BEGIN
  FOREACH v_table IN ARRAY ARRAY['finished_jobs', 'job_attempts', 'job_events'] LOOP
    SELECT porter_uuidv7_time(p.hi) INTO v_last FROM porter_history_partitions(v_table::regclass) p
     WHERE NOT p.is_default ORDER BY p.hi DESC LIMIT 1;
    -- From the end of the last day (filling a gap left while maintenance was down, at most p_days
    -- back), or today.
    v_day := greatest(coalesce(v_last, v_today), v_today - p_days * interval '1 day');
    WHILE v_day < p_now + p_days * interval '1 day' LOOP
      v_lo := porter_uuidv7_floor(v_day);
      v_hi := porter_uuidv7_floor(v_day + interval '1 day');
      v_name := v_table || '_p' || to_char(v_day AT TIME ZONE 'UTC', 'YYYYMMDD');
      EXECUTE format('SELECT EXISTS (SELECT 1 FROM %I d WHERE d.job_id >= $1 AND d.job_id < $2)', v_table || '_default')
        INTO v_taken USING v_lo, v_hi;
      IF NOT v_taken THEN
        BEGIN
          EXECUTE format('CREATE TABLE %I PARTITION OF %I FOR VALUES FROM (%L) TO (%L)', v_name, v_table, v_lo, v_hi);
          RETURN NEXT v_name;
        EXCEPTION WHEN lock_not_available THEN
          -- Readers or writers held the table: the next pass tries again.
          RETURN;
        END;
      END IF;
      v_day := v_day + interval '1 day';
    END LOOP;
  END LOOP;
END $$;

-- Retires, one step per call, the oldest partition of finished_jobs, job_attempts or job_events
-- whose every job was created before the horizon (porter_history_horizon_s before p_now); among
-- days ending together finished_jobs' goes first. Returns a row per step (none when nothing was
-- due, or when a table could not be locked at once: the next pass tries again).
--
-- A day of finished_jobs: the rows to keep are DEAD jobs (the dead-letter queue keeps them until
-- redriven) and jobs that finished within their queue's retention although created before the
-- horizon. First the idempotency keys and effects of the rows to drop are deleted, p_chunk rows of
-- the partition at a time in job_id order (one range of its primary key a call, a short
-- transaction each: keys and effects cannot be partitioned by job, see docs/scaling.md), with
-- their progress in _porter_history_retirement; a call that deletes a chunk returns it
-- (is_dropped false). The call whose chunk reaches the partition's end detaches it, moves the rows
-- to keep into finished_jobs_default and drops it. Every step of one day judges the rows with the
-- clock and queue retentions of its first step, so a row whose key was deleted is always dropped
-- and a row kept always keeps its key (a job that finishes later is kept: it finished after the
-- first step).
--
-- A day of job_attempts or job_events: the rows of jobs still kept — in finished_jobs (its rows of
-- that range are in finished_jobs_default by then, or in a day not yet due) or still live in jobs
-- — are moved into the table's default partition, and the day is dropped.
--
-- Either way the day's rows are read (counted, the rows to keep copied aside) under a SHARE lock
-- of the partition alone, before the partitioned table is locked to detach it: that lock, which
-- the acks and failures queue behind, is held for the move of the kept rows and the drop only.
CREATE OR REPLACE FUNCTION porter_history_retire(p_now timestamptz, p_chunk integer DEFAULT 10000)
RETURNS TABLE (partition_name text, dropped bigint, kept bigint, chunked bigint, keys_deleted bigint, is_dropped boolean)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp SET lock_timeout = '100ms' AS $$
DECLARE
  v_cutoff uuid := porter_uuidv7_floor(p_now - porter_history_horizon_s() * interval '1 second');
  v_zero uuid := '00000000-0000-0000-0000-000000000000';
  -- The day under way, if any (_porter_history_retirement's row).
  v_ret_name text;
  v_ret_started timestamptz;
  v_ret_retentions jsonb;
  v_ret_cursor uuid;
  v_table text;
  v_part text;
  v_lo uuid;
  v_hi uuid;
  v_total bigint;
  v_kept bigint;
  v_rows bigint;
  v_keys bigint;
  v_last uuid;
  v_cols text;
  v_keep text;
BEGIN
  -- A day under way is finished first, with the clock it began with.
  SELECT r.partition_name, r.started_at, r.retentions, r.cursor_id INTO v_ret_name, v_ret_started, v_ret_retentions, v_ret_cursor
    FROM _porter_history_retirement r ORDER BY r.started_at LIMIT 1;
  IF v_ret_name IS NOT NULL AND to_regclass(v_ret_name) IS NULL THEN
    DELETE FROM _porter_history_retirement r WHERE r.partition_name = v_ret_name;
    v_ret_name := NULL;
    v_ret_cursor := NULL;
  END IF;
  IF v_ret_name IS NOT NULL THEN
    v_table := 'finished_jobs';
    SELECT p.name, p.lo, p.hi INTO v_part, v_lo, v_hi FROM porter_history_partitions('public.finished_jobs') p WHERE p.name = v_ret_name;
  ELSE
    SELECT t.tbl, p.name, p.lo, p.hi INTO v_table, v_part, v_lo, v_hi
      FROM unnest(ARRAY['finished_jobs', 'job_attempts', 'job_events']) WITH ORDINALITY AS t(tbl, ord)
     CROSS JOIN LATERAL porter_history_partitions(t.tbl::regclass) p
     WHERE NOT p.is_default AND p.hi <= v_cutoff
     ORDER BY p.hi, t.ord LIMIT 1;
    IF v_part IS NULL THEN
      RETURN;
    END IF;
  END IF;
  SELECT string_agg(quote_ident(a.attname), ', ' ORDER BY a.attnum) INTO v_cols
    FROM pg_attribute a WHERE a.attrelid = v_table::regclass AND a.attnum > 0 AND NOT a.attisdropped;

  IF v_table <> 'finished_jobs' THEN
    -- The rows to keep are read under a SHARE lock of the partition alone (its day's writes wait,
    -- every other day's go on), then the partitioned table is locked only to detach, move them and
    -- drop: milliseconds, whatever the day's size.
    BEGIN
      EXECUTE format('LOCK TABLE %I IN SHARE MODE', v_part);
    EXCEPTION WHEN lock_not_available THEN
      RETURN;
    END;
    EXECUTE format('SELECT count(*) FROM %I', v_part) INTO v_total;
    DROP TABLE IF EXISTS pg_temp.porter_history_keep;
    EXECUTE format(
      'CREATE TEMP TABLE porter_history_keep ON COMMIT DROP AS SELECT * FROM %I x
        WHERE x.job_id IN (SELECT f.job_id FROM finished_jobs f WHERE f.job_id >= $1 AND f.job_id < $2)
           OR x.job_id IN (SELECT j.job_id FROM jobs j WHERE j.job_id >= $1 AND j.job_id < $2)', v_part)
      USING coalesce(v_lo, v_zero), v_hi;
    BEGIN
      EXECUTE format('ALTER TABLE %I DETACH PARTITION %I', v_table, v_part);
    EXCEPTION WHEN lock_not_available THEN
      RETURN;
    END;
    -- Detached under this transaction's lock (held to the commit), its range belongs to the
    -- default partition.
    EXECUTE format('INSERT INTO %I (%s) SELECT %s FROM pg_temp.porter_history_keep', v_table || '_default', v_cols, v_cols);
    GET DIAGNOSTICS v_kept = ROW_COUNT;
    EXECUTE format('DROP TABLE %I', v_part);
    RETURN QUERY SELECT v_part, v_total - v_kept, v_kept, 0::bigint, 0::bigint, true;
    RETURN;
  END IF;

  -- finished_jobs: the keys and effects of the rows to drop, one chunk.
  IF v_ret_name IS NULL THEN
    INSERT INTO _porter_history_retirement AS r (partition_name, started_at, retentions)
    VALUES (v_part, p_now, (SELECT coalesce(jsonb_object_agg(q.id, q.retention_s), '{}') FROM queues q))
    RETURNING r.started_at, r.retentions INTO v_ret_started, v_ret_retentions;
  END IF;
  -- A row to keep: dead, or finished within its queue's retention (a queue gone: not kept).
  v_keep := format(
    '(f.state = ''DEAD'' OR f.finished_at >= %L::timestamptz - coalesce((%L::jsonb ->> f.queue_id)::integer, 0) * interval ''1 second'')',
    v_ret_started, v_ret_retentions);
  EXECUTE format(
    'WITH c AS MATERIALIZED (
       SELECT f.job_id, f.tenant_id, f.idempotency_key, %s AS keep FROM %I f WHERE f.job_id > $1 ORDER BY f.job_id LIMIT $2),
     k AS (DELETE FROM idempotency_keys k USING c
            WHERE NOT c.keep AND (k.tenant_id, k.idempotency_key) = (c.tenant_id, c.idempotency_key) AND k.job_id = c.job_id RETURNING 1),
     fx AS (DELETE FROM job_effects x USING c WHERE NOT c.keep AND x.job_id = c.job_id),
     -- Attempts and events of these jobs in the timeline tables'' default partitions (a day whose
     -- partition was skipped): the day partitions go with a DROP of their own.
     a AS (DELETE FROM job_attempts_default x USING c WHERE NOT c.keep AND x.job_id = c.job_id),
     e AS (DELETE FROM job_events_default x USING c WHERE NOT c.keep AND x.job_id = c.job_id)
     SELECT (SELECT count(*) FROM c), (SELECT c.job_id FROM c ORDER BY c.job_id DESC LIMIT 1), (SELECT count(*) FROM k)',
    v_keep, v_part)
    INTO v_rows, v_last, v_keys USING coalesce(v_ret_cursor, v_zero), p_chunk;
  UPDATE _porter_history_retirement r SET cursor_id = coalesce(v_last, r.cursor_id), keys_deleted = r.keys_deleted + v_keys
   WHERE r.partition_name = v_part;
  IF v_rows >= p_chunk THEN
    RETURN QUERY SELECT v_part, 0::bigint, 0::bigint, v_rows, v_keys, false;
    RETURN;
  END IF;

  -- The last chunk: the day goes. Its rows to keep are read under a SHARE lock of the partition
  -- alone (writes to that day wait, every other day's go on); the partitioned table is locked only
  -- to detach, move them and drop.
  BEGIN
    EXECUTE format('LOCK TABLE %I IN SHARE MODE', v_part);
  EXCEPTION WHEN lock_not_available THEN
    RETURN QUERY SELECT v_part, 0::bigint, 0::bigint, v_rows, v_keys, false;
    RETURN;
  END;
  EXECUTE format('SELECT count(*) FROM %I', v_part) INTO v_total;
  DROP TABLE IF EXISTS pg_temp.porter_history_keep;
  EXECUTE format('CREATE TEMP TABLE porter_history_keep ON COMMIT DROP AS SELECT * FROM %I f WHERE %s', v_part, v_keep);
  BEGIN
    EXECUTE format('ALTER TABLE finished_jobs DETACH PARTITION %I', v_part);
  EXCEPTION WHEN lock_not_available THEN
    RETURN QUERY SELECT v_part, 0::bigint, 0::bigint, v_rows, v_keys, false;
    RETURN;
  END;
  -- Detached, its range belongs to the default partition: the rows to keep move there under the
  -- same job_id. A move, not an event: inserted into the partition itself, so the statement
  -- triggers of finished_jobs (DLQ counts, status stream, webhooks) do not see it, with the row
  -- triggers cloned onto the partition off for this statement (this transaction holds the
  -- partition's lock from the ALTER to the commit: no other writer sees them off).
  ALTER TABLE finished_jobs_default DISABLE TRIGGER USER;
  EXECUTE format('INSERT INTO finished_jobs_default (%s) SELECT %s FROM pg_temp.porter_history_keep', v_cols, v_cols);
  GET DIAGNOSTICS v_kept = ROW_COUNT;
  ALTER TABLE finished_jobs_default ENABLE TRIGGER USER;
  EXECUTE format('DROP TABLE %I', v_part);
  DELETE FROM _porter_history_retirement r WHERE r.partition_name = v_part;
  RETURN QUERY SELECT v_part, v_total - v_kept, v_kept, v_rows, v_keys, true;
END $$;
