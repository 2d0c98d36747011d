-- Failure groups of the dead-letter queue, maintained as jobs die (not by a scan). A routine: this
-- file is the one source of the functions and triggers below, re-applied by the migrator whenever
-- its checksum changes. The tables are in prisma/migrations/20261202000500_dlq.
--
-- 1. porter_normalize_error_message(message): the message with what varies between occurrences of
--    one bug replaced by placeholders — stack frames dropped, URLs, e-mail addresses, UUIDs, IP
--    addresses, timestamps, host names, quoted values, hex and prefixed ids and numbers (a unit glued on stays:
--    <n>ms) — whitespace collapsed, cut to 500 characters. What tells bugs apart stays: the SQL
--    object a PostgreSQL error names (constraint "orders_pkey"), HTTP status codes, short versioned
--    names (gpt-4o). Tested with realistic messages in dlq/normalize.int.test.ts.
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
-- plpgsql, one step a line (the order matters: URLs before hosts, quoted values before numbers,
-- units before ids); it runs once per dead row, never on the hot path.
-- Since migration 20261202002400_partitioned_history finished_jobs is partitioned: the triggers
-- below are declared on the partitioned table (the row trigger is cloned onto each partition; the
-- statement triggers see the rows of every partition in their transition tables).
CREATE OR REPLACE FUNCTION porter_normalize_error_message(p_message text) RETURNS text
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
  m text := coalesce(p_message, '');
BEGIN
  -- Stack frames ("    at fn (file:line:col)", "  File \"x.py\", line 3, in f" and the source line
  -- under it), Python's "Traceback (most recent call last):" header, PostgreSQL's CONTEXT lines.
  m := regexp_replace(m, '\n[ \t]*at [^\n]*', '', 'g');
  m := regexp_replace(m, '\n[ \t]*File "[^\n]*(\n[ \t]{4,}[^\n]*)?', '', 'g');
  m := regexp_replace(m, '(^|\n)Traceback \(most recent call last\):[^\n]*', '', 'g');
  m := regexp_replace(m, '\n(CONTEXT|STATEMENT|QUERY): [^\n]*', '', 'g');
  -- URLs (any scheme://…, up to whitespace or a closing quote/bracket), e-mail addresses, UUIDs.
  m := regexp_replace(m, '[a-zA-Z][a-zA-Z0-9+.-]*://[^\s"''<>)\]]+', '<url>', 'g');
  m := regexp_replace(m, '[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}', '<email>', 'g');
  m := regexp_replace(m, '[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}', '<uuid>', 'g');
  -- Timestamps (ISO 8601 or PostgreSQL's text form: 2026-12-01T10:15:00Z, 2026-12-01 10:15:00.12+00).
  m := regexp_replace(m, '\m\d{4}-\d\d-\d\d([T ]\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d(:?\d\d)?)?)?', '<time>', 'g');
  -- IPv4 (optionally :port), bracketed or full/compressed IPv6.
  m := regexp_replace(m, '\m\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}(:\d+)?\M', '<ip>', 'g');
  m := regexp_replace(m, '\[[0-9a-fA-F:]+\](:\d+)?|\m[0-9a-fA-F]{1,4}(:[0-9a-fA-F]{0,4}){3,7}\M', '<ip>', 'g');
  -- Host names: three labels or more, or two with a common top-level domain, optionally :port.
  -- File names (x.js, a.b.py) are not hosts: the last label must not be a source extension.
  m := regexp_replace(m, '\m[A-Za-z][A-Za-z0-9-]*(\.[A-Za-z0-9-]+)+\.(com|net|org|io|dev|app|cloud|internal|local|localhost|ai|co|svc|us|eu|uk|de)(:\d+)?\M', '<host>', 'g');
  m := regexp_replace(m, '\m[A-Za-z][A-Za-z0-9-]*\.(com|net|org|io|dev|app|cloud|internal|local|localhost|ai|co|svc)(:\d+)?\M', '<host>', 'g');
  m := regexp_replace(m, '\mlocalhost(:\d+)\M', '<host>', 'g');
  -- Quoted values ("…", '…', `…`) go, but the SQL object a PostgreSQL error names stays: a
  -- different constraint, relation or column is a different bug. Protected by \x01…\x02 first.
  m := regexp_replace(m, '\m(constraint|relation|column|table|index|type|function|schema|database|role|extension|sequence|view|trigger) "([A-Za-z_][A-Za-z0-9_.$]*)"',
                      '\1 ' || chr(1) || '\2' || chr(2), 'gi');
  m := regexp_replace(m, '"[^"\n]*"', '"<v>"', 'g');
  m := regexp_replace(m, '''[^''\n]*''', '''<v>''', 'g');
  m := regexp_replace(m, '`[^`\n]*`', '`<v>`', 'g');
  m := replace(replace(m, chr(1), '"'), chr(2), '"');
  -- PostgreSQL's "Key (col)=(value)": the value goes, the column stays.
  m := regexp_replace(m, '\)=\([^)\n]*\)', ')=(<v>)', 'g');
  -- Long hex with at least one letter (hashes, object ids, trace ids); long digit runs are numbers.
  m := regexp_replace(m, '\m(?=[0-9]*[a-fA-F])[0-9a-fA-F]{12,}\M', '<hex>', 'g');
  -- Numbers with a unit glued on keep the unit: 30000ms → <n>ms, 2.4s → <n>s, 512MB → <n>MB.
  m := regexp_replace(m, '\m\d+(\.\d+)?(ms|s|sec|secs|m|min|mins|h|hr|hrs|d|us|ns|b|kb|mb|gb|tb|kib|mib|gib|x)\M', '<n>\2', 'gi');
  -- Provider ids with a short prefix (Stripe's ch_/cus_/req_/evt_…): prefix, underscore and eight
  -- or more characters holding a digit or mixed case (req_awk4iwhgdu, cus_NffrFeUfNV); snake_case
  -- words (email_verification, users_email_key) stay.
  m := regexp_replace(m, '\m[a-z]{1,8}_(?=[A-Za-z0-9]*([0-9]|[A-Z][a-z]|[a-z][A-Z]))[A-Za-z0-9]{8,}\M', '<id>', 'g');
  -- Ids: words of six characters or more mixing letters and at least two digits (ch_3Nq8ZK2e,
  -- req-8f3a9c, org-abc123XYZ); gpt-4o, v2, utf8, sha256 stay.
  m := regexp_replace(m, '\m(?=[A-Za-z0-9_-]*[0-9][A-Za-z_-]*[0-9])(?=[A-Za-z0-9_-]*[A-Za-z])[A-Za-z0-9_-]{6,}\M', '<id>', 'g');
  -- HTTP status codes stay (a 404 and a 503 are different errors); other numbers go.
  m := regexp_replace(m, '\m(HTTP(/[0-9.]+)?|[Ss]tatus|[Ss]tatus [Cc]ode|[Cc]ode) ([1-5][0-9][0-9])\M', '\1 ' || chr(1) || '\3', 'g');
  m := regexp_replace(m, '(?<!' || chr(1) || ')\m\d+(\.\d+)?\M', '<n>', 'g');
  m := replace(m, chr(1), '');
  -- Whitespace collapsed (multi-line messages become one line), cut to 500 characters.
  RETURN left(btrim(regexp_replace(m, '\s+', ' ', 'g')), 500);
END $$;

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
  -- death it waited for). An ignore has one of its two bounds, the other NULL: each comparison is
  -- coalesced, or a NULL would reach the NOT NULL is_regression.
  WITH dead AS (
    SELECT dlq_fingerprint AS fp, job_id, job_type, queue_id, tenant_id, finished_at, error
      FROM dlq_new WHERE dlq_fingerprint IS NOT NULL
  ), per_group AS (
    SELECT fp, min(job_type) AS job_type,
           (array_agg(coalesce(error ->> 'code', 'UNKNOWN') ORDER BY finished_at DESC, job_id DESC))[1] AS code,
           (array_agg(coalesce(error ->> 'class', 'unknown') ORDER BY finished_at DESC, job_id DESC))[1] AS class,
           (array_agg(coalesce(error ->> 'message', '') ORDER BY finished_at DESC, job_id DESC))[1] AS message,
           (array_agg(job_id ORDER BY finished_at DESC, job_id DESC))[1] AS sample_job_id,
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
           -- The reopen's mark for RETURNING (which sees only the new row): clock_timestamp(), later
           -- than the transaction's now(), only on the update that reopens the group. Another
           -- statement of the same transaction, or a concurrent one that waited for this row, sets
           -- now() and reports no second reopen.
           updated_at = CASE WHEN g.status = 'resolved'
                               OR (g.status = 'ignored' AND (coalesce(g.ignored_until <= now(), false) OR coalesce(g.ignore_remaining <= EXCLUDED.count, false)))
                             THEN clock_timestamp() ELSE now() END,
           status = CASE WHEN g.status = 'resolved'
                           OR (g.status = 'ignored' AND (coalesce(g.ignored_until <= now(), false) OR coalesce(g.ignore_remaining <= EXCLUDED.count, false)))
                         THEN 'new'::dlq_status ELSE g.status END,
           is_regression = g.is_regression
                           OR g.status = 'resolved'
                           OR (g.status = 'ignored' AND (coalesce(g.ignored_until <= now(), false) OR coalesce(g.ignore_remaining <= EXCLUDED.count, false))),
           reopened_at = CASE WHEN g.status = 'resolved'
                                OR (g.status = 'ignored' AND (coalesce(g.ignored_until <= now(), false) OR coalesce(g.ignore_remaining <= EXCLUDED.count, false)))
                              THEN now() ELSE g.reopened_at END,
           status_changed_at = CASE WHEN g.status = 'resolved'
                                      OR (g.status = 'ignored' AND (coalesce(g.ignored_until <= now(), false) OR coalesce(g.ignore_remaining <= EXCLUDED.count, false)))
                                    THEN now() ELSE g.status_changed_at END,
           ignored_until = CASE WHEN g.status = 'resolved'
                                  OR (g.status = 'ignored' AND (coalesce(g.ignored_until <= now(), false) OR coalesce(g.ignore_remaining <= EXCLUDED.count, false)))
                                THEN NULL ELSE g.ignored_until END,
           ignore_remaining = CASE WHEN g.status = 'resolved'
                                     OR (g.status = 'ignored' AND (coalesce(g.ignored_until <= now(), false) OR coalesce(g.ignore_remaining <= EXCLUDED.count, false)))
                                   THEN NULL
                                   WHEN g.ignore_remaining IS NOT NULL THEN g.ignore_remaining - EXCLUDED.count::int
                                   ELSE NULL END
    RETURNING g.id, g.fingerprint, g.updated_at <> now() AS reopened
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
