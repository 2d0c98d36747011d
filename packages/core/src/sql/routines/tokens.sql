-- porter_tokens: the token-bucket arithmetic shared by the claim (tenant start rates, resource keys:
-- claim.sql), the producer's key authentication (authenticate-key.sql), tenant admission
-- (packages/core/src/sql/admission.ts) and the sign-in throttle (packages/core/src/sql/signin-throttle.ts).
-- A routine: this file is its one source, re-applied by the migrator whenever its checksum changes.
--
-- Tokens available now in a bucket (rate_buckets) that held `tokens` at `updated_at`, refilling at
-- `rate` per second up to `burst`. A missing bucket (tokens null) is full; no rate is unlimited.
-- IMMUTABLE and plain SQL, so the planner inlines it into the statements that call it.
CREATE OR REPLACE FUNCTION porter_tokens(p_tokens double precision, p_updated timestamptz, p_rate double precision,
                              p_burst double precision, p_now timestamptz)
RETURNS double precision LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN p_rate IS NULL THEN 'Infinity'::double precision
              WHEN p_tokens IS NULL THEN p_burst
              ELSE least(p_burst, p_tokens + greatest(0, extract(epoch FROM p_now - p_updated)) * p_rate) END
$$;
