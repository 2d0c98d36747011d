-- porter_authenticate_key: the producer hot path in one round trip (called by
-- packages/core/src/sql/authenticate-key.ts): authenticate an API key, charge its call to the key's
-- rate bucket, and note last_used_at (at most once a minute). A routine: this file is its one
-- source, re-applied by the migrator whenever its checksum changes.
--
-- p_take: how many calls' tokens to take at once (at least one, at most what the bucket holds).
-- The API server's key cache (packages/core/src/sql/key-auth-cache.ts) takes a few at a time and
-- spends them in process: the shared bucket still hands out no more than rate × time + burst
-- across every process, with one round trip per handful of calls instead of one per call.
--
-- Outcomes: 'throttled' (too many failed secrets for this key id or from this address: refused
-- before the secret is looked at), 'invalid' (unknown, revoked or wrong secret: one failure charged
-- to the address, and to the key id when it names a real key), 'rate_limited' (with the seconds
-- until the next token), 'ok' (with the tokens granted). `rate` is the key's call rate (NULL
-- before the key is known). rate_buckets scopes: 'api_key', 'api_key_fail', 'api_key_fail_addr'.
CREATE OR REPLACE FUNCTION porter_authenticate_key(p_id text, p_secret_hash text, p_address text, p_now timestamptz,
                                        p_default_rate double precision,
                                        p_fail_rate double precision, p_fail_burst double precision,
                                        p_take integer DEFAULT 1)
RETURNS TABLE (outcome text, tenant_ids text[], job_types text[], retry_after_s double precision, granted integer,
              rate double precision)
LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
  v_now timestamptz := coalesce(p_now, now());
  v_key record;
  v_fail double precision;
  v_rate double precision;
  v_burst double precision;
  v_tokens double precision;
  v_take integer;
  v_found boolean;
BEGIN
  -- Only bookkeeping is written here (buckets, last_used_at): losing its last commits in a crash
  -- costs a few tokens, never a job. The function runs as its own statement on the pool (never
  -- inside a caller's transaction), so this transaction is Porter's.
  PERFORM set_config('synchronous_commit', 'off', true);

  -- Too many failures for this key id or from this address: refused before the secret is looked at.
  SELECT min(porter_tokens(b.tokens, b.updated_at, p_fail_rate, p_fail_burst, v_now)) INTO v_fail
    FROM rate_buckets b
   WHERE (b.scope = 'api_key_fail' AND b.key = p_id) OR (b.scope = 'api_key_fail_addr' AND b.key = p_address);
  IF v_fail IS NOT NULL AND v_fail < 1 THEN
    RETURN QUERY SELECT 'throttled'::text, NULL::text[], NULL::text[], (1 - v_fail) / p_fail_rate, 0, NULL::double precision;
    RETURN;
  END IF;

  SELECT k.id, k.secret_hash, k.tenant_ids, k.job_types, k.rate_per_second INTO v_key
    FROM api_keys k WHERE k.id = p_id AND k.revoked_at IS NULL;
  v_found := FOUND;
  IF NOT v_found OR v_key.secret_hash <> p_secret_hash THEN
    -- One failure charged to the address, and to the key id when it names a real key (unknown ids
    -- would only fill the table).
    INSERT INTO rate_buckets AS b (scope, key, tokens, updated_at)
    SELECT s.scope, s.key, p_fail_burst - 1, v_now
      FROM (VALUES ('api_key_fail', CASE WHEN v_found THEN p_id END), ('api_key_fail_addr', p_address)) s(scope, key)
     WHERE s.key IS NOT NULL
    ON CONFLICT (scope, key) DO UPDATE
      SET tokens = greatest(0, porter_tokens(b.tokens, b.updated_at, p_fail_rate, p_fail_burst, v_now) - 1), updated_at = v_now;
    RETURN QUERY SELECT 'invalid'::text, NULL::text[], NULL::text[], NULL::double precision, 0, NULL::double precision;
    RETURN;
  END IF;

  -- The key's call rate: take p_take tokens (fewer when the bucket holds fewer, at least one), or
  -- say when the next one is due. How many to take is read first without a lock; when a concurrent
  -- caller took them meanwhile, the guarded update takes none and one token is tried instead.
  v_rate := coalesce(v_key.rate_per_second, p_default_rate);
  v_burst := greatest(1, v_rate);
  SELECT porter_tokens(b.tokens, b.updated_at, v_rate, v_burst, v_now) INTO v_tokens
    FROM rate_buckets b WHERE b.scope = 'api_key' AND b.key = p_id;
  v_take := greatest(1, least(greatest(1, coalesce(p_take, 1)), floor(coalesce(v_tokens, v_burst))::integer));
  v_tokens := NULL;
  FOR attempt IN 1..2 LOOP
    INSERT INTO rate_buckets AS b (scope, key, tokens, updated_at) VALUES ('api_key', p_id, v_burst - v_take, v_now)
    ON CONFLICT (scope, key) DO UPDATE
      SET tokens = porter_tokens(b.tokens, b.updated_at, v_rate, v_burst, v_now) - v_take, updated_at = v_now
      WHERE porter_tokens(b.tokens, b.updated_at, v_rate, v_burst, v_now) >= v_take
    RETURNING b.tokens INTO v_tokens;
    EXIT WHEN v_tokens IS NOT NULL OR v_take = 1;
    v_take := 1;
  END LOOP;
  IF v_tokens IS NULL THEN
    SELECT porter_tokens(b.tokens, b.updated_at, v_rate, v_burst, v_now) INTO v_tokens
      FROM rate_buckets b WHERE b.scope = 'api_key' AND b.key = p_id;
    RETURN QUERY SELECT 'rate_limited'::text, v_key.tenant_ids, v_key.job_types, (1 - coalesce(v_tokens, 0)) / v_rate, 0, v_rate;
    RETURN;
  END IF;

  -- Coalesced: one write a minute per key, whatever its call rate (concurrent callers re-check the
  -- condition after the row lock, so only one of them writes).
  UPDATE api_keys k SET last_used_at = v_now
   WHERE k.id = p_id AND (k.last_used_at IS NULL OR k.last_used_at < v_now - interval '1 minute');

  RETURN QUERY SELECT 'ok'::text, v_key.tenant_ids, v_key.job_types, NULL::double precision, v_take, v_rate;
END $$;
