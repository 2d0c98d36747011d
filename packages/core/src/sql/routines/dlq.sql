-- Failure groups of the dead-letter queue, maintained as jobs die (not by a scan). A routine: this
-- file is the one source of the functions and triggers below, re-applied by the migrator whenever
-- its checksum changes. The tables are in prisma/migrations/20261202000500_dlq.
--
-- 1. porter_normalize_error_message(message): the message with what varies between occurrences of
--    one bug replaced by placeholders — stack frames dropped, URLs, e-mail addresses, UUIDs, IP
--    addresses, host names, quoted values, hex and prefixed ids and numbers — whitespace collapsed,
--    cut to 500 characters. Tested with realistic messages in dlq/normalize.int.test.ts.
-- 2. porter_dlq_fingerprint(job type, code, class, message): md5 of the four, the normalized
--    message standing for the message. The key of a failure group.
-- 3. A BEFORE INSERT row trigger on finished_jobs, for DEAD rows only (WHEN clause: nothing runs
--    for the other states), sets `dlq_fingerprint`.
-- 4. An AFTER INSERT statement trigger aggregates the statement's dead rows per fingerprint and
--    upserts the groups, their facets (queues, tenants, worker versions), hourly counts and the
--    death rows, each in key order: concurrent statements lock group rows in the same order, so
--    deaths of one fingerprint from many workers serialize on the group row and count exactly,
--    without deadlocks. A resolved group, or an ignored one whose ignore ran out, reopens as a
--    regression (status new, a `reopened` event on its thread).
-- 5. An AFTER DELETE statement trigger lowers `dead_now` for dead rows leaving finished_jobs
--    (a redrive, retention).
CREATE OR REPLACE FUNCTION porter_normalize_error_message(p_message text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT left(btrim(regexp_replace(
    -- numbers (integers, decimals, with units glued on: 30000ms, 1.5s)
    regexp_replace(
    -- ids: words mixing letters and digits (ch_3Nq8ZK2e, req-8f3a9c, v2 stays: at least 6 characters)
    regexp_replace(
    -- long hex (hashes, object ids, trace ids)
    regexp_replace(
    -- quoted values: "…", '…', `…`
    regexp_replace(regexp_replace(regexp_replace(
    -- host names: at least three labels, or two with a common top-level domain, optionally :port
    regexp_replace(regexp_replace(
    -- IPv4 (optionally :port) and bracketed/compressed IPv6
    regexp_replace(regexp_replace(
    -- UUIDs
    regexp_replace(
    -- e-mail addresses
    regexp_replace(
    -- URLs (any scheme://…, up to whitespace or a closing quote/bracket)
    regexp_replace(
    -- stack frames ("    at fn (file:line:col)", "  File \"x.py\", line 3") and blank lines
    regexp_replace(regexp_replace(coalesce(p_message, ''),
      '\n[ \t]*at [^\n]*', '', 'g'),
      '\n[ \t]*File "[^\n]*', '', 'g'),
      '[a-zA-Z][a-zA-Z0-9+.-]*://[^\s"''<>)\]]+', '<url>', 'g'),
      '[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}', '<email>', 'g'),
      '[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}', '<uuid>', 'g'),
      '\m\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}(:\d+)?\M', '<ip>', 'g'),
      '\[[0-9a-fA-F:]+\](:\d+)?|\m[0-9a-fA-F]{1,4}(:[0-9a-fA-F]{0,4}){3,7}\M', '<ip>', 'g'),
      '\m[A-Za-z0-9-]+(\.[A-Za-z0-9-]+){2,}(:\d+)?\M', '<host>', 'g'),
      '\m[A-Za-z0-9-]+\.(com|net|org|io|dev|app|cloud|internal|local|localhost|ai|co|svc)(:\d+)?\M', '<host>', 'g'),
      '"[^"\n]*"', '"<v>"', 'g'),
      '''[^''\n]*''', '''<v>''', 'g'),
      '`[^`\n]*`', '`<v>`', 'g'),
      '\m[0-9a-fA-F]{12,}\M', '<hex>', 'g'),
      '\m(?=[A-Za-z0-9_-]*[0-9])(?=[A-Za-z0-9_-]*[A-Za-z])[A-Za-z0-9_-]{6,}\M', '<id>', 'g'),
      '\m\d+(\.\d+)?', '<n>', 'g'),
    '\s+', ' ', 'g')), 500)
$$;

CREATE OR REPLACE FUNCTION porter_dlq_fingerprint(p_job_type text, p_code text, p_class text, p_message text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT md5(coalesce(p_job_type, '') || chr(31) || coalesce(p_code, 'UNKNOWN') || chr(31) || coalesce(p_class, 'unknown')
             || chr(31) || porter_normalize_error_message(p_message))
$$;

CREATE OR REPLACE FUNCTION porter_dlq_stamp() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.dlq_fingerprint := porter_dlq_fingerprint(NEW.job_type, NEW.error ->> 'code', NEW.error ->> 'class', NEW.error ->> 'message');
  RETURN NEW;
END $$;
CREATE OR REPLACE TRIGGER finished_jobs_dlq_stamp BEFORE INSERT ON finished_jobs
  FOR EACH ROW WHEN (NEW.state = 'DEAD') EXECUTE FUNCTION porter_dlq_stamp();

CREATE OR REPLACE FUNCTION porter_dlq_record() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM dlq_new WHERE dlq_fingerprint IS NOT NULL) THEN
    RETURN NULL;
  END IF;
  -- Groups, in fingerprint order. A group is reopened (a regression) when a death arrives after it
  -- was resolved, or while ignored once the ignore ran out (its date passed, or this was the Nth
  -- death it waited for).
  WITH dead AS (
    SELECT dlq_fingerprint AS fp, job_id, job_type, queue_id, tenant_id, finished_at, error
      FROM dlq_new WHERE dlq_fingerprint IS NOT NULL
  ), per_group AS (
    SELECT fp, min(job_type) AS job_type,
           (array_agg(coalesce(error ->> 'code', 'UNKNOWN') ORDER BY finished_at DESC))[1] AS code,
           (array_agg(coalesce(error ->> 'class', 'unknown') ORDER BY finished_at DESC))[1] AS class,
           (array_agg(coalesce(error ->> 'message', '') ORDER BY finished_at DESC))[1] AS message,
           (array_agg(job_id ORDER BY finished_at DESC))[1] AS sample_job_id,
           count(*) AS n, min(finished_at) AS first_at, max(finished_at) AS last_at
      FROM dead GROUP BY fp
  ), upserted AS (
    INSERT INTO dlq_groups AS g (fingerprint, job_type, error_code, error_class, normalized_message, sample_message,
                                 sample_job_id, count, dead_now, first_seen, last_seen, status_changed_at, updated_at)
    SELECT fp, job_type, code, class, porter_normalize_error_message(message), left(message, 2000), sample_job_id,
           n, n, first_at, last_at, now(), now()
      FROM per_group ORDER BY fp
    ON CONFLICT (fingerprint) DO UPDATE
       SET count = g.count + EXCLUDED.count,
           dead_now = g.dead_now + EXCLUDED.dead_now,
           last_seen = greatest(g.last_seen, EXCLUDED.last_seen),
           sample_message = EXCLUDED.sample_message,
           sample_job_id = EXCLUDED.sample_job_id,
           updated_at = now(),
           status = CASE WHEN g.status = 'resolved'
                           OR (g.status = 'ignored' AND (g.ignored_until <= now() OR g.ignore_remaining <= EXCLUDED.count))
                         THEN 'new'::dlq_status ELSE g.status END,
           is_regression = g.is_regression
                           OR g.status = 'resolved'
                           OR (g.status = 'ignored' AND (g.ignored_until <= now() OR g.ignore_remaining <= EXCLUDED.count)),
           reopened_at = CASE WHEN g.status = 'resolved'
                                OR (g.status = 'ignored' AND (g.ignored_until <= now() OR g.ignore_remaining <= EXCLUDED.count))
                              THEN now() ELSE g.reopened_at END,
           status_changed_at = CASE WHEN g.status = 'resolved'
                                      OR (g.status = 'ignored' AND (g.ignored_until <= now() OR g.ignore_remaining <= EXCLUDED.count))
                                    THEN now() ELSE g.status_changed_at END,
           ignored_until = CASE WHEN g.status = 'resolved'
                                  OR (g.status = 'ignored' AND (g.ignored_until <= now() OR g.ignore_remaining <= EXCLUDED.count))
                                THEN NULL ELSE g.ignored_until END,
           ignore_remaining = CASE WHEN g.status = 'resolved'
                                     OR (g.status = 'ignored' AND (g.ignored_until <= now() OR g.ignore_remaining <= EXCLUDED.count))
                                   THEN NULL
                                   WHEN g.ignore_remaining IS NOT NULL THEN g.ignore_remaining - EXCLUDED.count::int
                                   ELSE NULL END
    RETURNING g.id, g.fingerprint, g.reopened_at = now() AND g.status_changed_at = now() AND g.status = 'new' AND g.is_regression AS reopened
  ), reopened AS (
    INSERT INTO dlq_events (group_id, at, actor, kind, body, data)
    SELECT id, now(), 'system:dlq', 'reopened', 'a new death arrived after the group was resolved or its ignore ran out',
           jsonb_build_object('regression', true)
      FROM upserted WHERE reopened
  ), facets AS (
    INSERT INTO dlq_group_facets AS f (group_id, kind, value, count)
    SELECT u.id, x.kind, x.value, count(*)
      FROM dead d JOIN upserted u ON u.fingerprint = d.fp
      CROSS JOIN LATERAL (VALUES ('queue', d.queue_id), ('tenant', d.tenant_id),
                                 ('worker_version', coalesce(nullif(d.error ->> 'worker_version', ''), 'unknown'))) AS x(kind, value)
     GROUP BY u.id, x.kind, x.value
     ORDER BY u.id, x.kind, x.value
    ON CONFLICT (group_id, kind, value) DO UPDATE SET count = f.count + EXCLUDED.count
  ), hours AS (
    INSERT INTO dlq_group_hours AS h (group_id, hour, deaths)
    SELECT u.id, date_trunc('hour', d.finished_at), count(*)
      FROM dead d JOIN upserted u ON u.fingerprint = d.fp
     GROUP BY 1, 2 ORDER BY 1, 2
    ON CONFLICT (group_id, hour) DO UPDATE SET deaths = h.deaths + EXCLUDED.deaths
  )
  INSERT INTO dlq_deaths (job_id, group_id, queue_id, tenant_id, died_at)
  SELECT d.job_id, u.id, d.queue_id, d.tenant_id, d.finished_at
    FROM dead d JOIN upserted u ON u.fingerprint = d.fp;
  RETURN NULL;
END $$;
CREATE OR REPLACE TRIGGER finished_jobs_dlq_record AFTER INSERT ON finished_jobs
  REFERENCING NEW TABLE AS dlq_new FOR EACH STATEMENT EXECUTE FUNCTION porter_dlq_record();

CREATE OR REPLACE FUNCTION porter_dlq_release() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM dlq_old WHERE dlq_fingerprint IS NOT NULL AND state = 'DEAD') THEN
    RETURN NULL;
  END IF;
  -- Lock the groups in fingerprint order first, as deaths do (an UPDATE … FROM locks in join order).
  PERFORM 1 FROM dlq_groups
    WHERE fingerprint IN (SELECT dlq_fingerprint FROM dlq_old WHERE dlq_fingerprint IS NOT NULL AND state = 'DEAD')
    ORDER BY fingerprint FOR UPDATE;
  UPDATE dlq_groups g
     SET dead_now = greatest(0, g.dead_now - r.n), updated_at = now()
    FROM (SELECT dlq_fingerprint AS fp, count(*) AS n FROM dlq_old
           WHERE dlq_fingerprint IS NOT NULL AND state = 'DEAD' GROUP BY 1 ORDER BY 1) r
   WHERE g.fingerprint = r.fp;
  RETURN NULL;
END $$;
CREATE OR REPLACE TRIGGER finished_jobs_dlq_release AFTER DELETE ON finished_jobs
  REFERENCING OLD TABLE AS dlq_old FOR EACH STATEMENT EXECUTE FUNCTION porter_dlq_release();
