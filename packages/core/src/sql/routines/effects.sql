-- The effect ledger behind `ctx.effect(key, fn)` (packages/core/src/sql/apply-effect.ts). A routine:
-- this file is the one source of the two functions below, re-applied by the migrator whenever its
-- checksum changes. The table is job_effects (one row per (tenant, key), ever).
--
-- An effect is one transaction on one connection, in two messages around `fn`:
--   BEGIN; SELECT * FROM porter_effect_claim(…)         -- lease checked, ledger row claimed
--   … fn's own statements on the same connection …
--   SELECT porter_effect_commit(…); COMMIT             -- fence, result, start mark, commit
--
-- Locks on the job row, and why no effect closes a deadlock cycle:
-- - The claim takes FOR KEY SHARE on the job row and holds it to the end. It conflicts only with
--   FOR UPDATE and DELETE (jobs has no unique column an update changes): the rescue's FOR UPDATE
--   SKIP LOCKED passes over a job with an effect in flight (as with FOR SHARE before), and the ack of
--   this attempt cannot come before its handler returns. The worker's batched non-key updates —
--   start marks (start-jobs.ts), lease extensions, checkpoints — never wait on it. The ledger row is
--   touched by nobody else but another claim of the same key, which waits for it (ON CONFLICT).
-- - The commit takes FOR SHARE (blocks a non-key update that moves the lease away — a hand-back, a
--   rescue that got in before the claim's lock — from committing under it) only in its last
--   message, after which it waits on nothing: it may wait for a batch holding the row, but holds
--   nothing such a batch waits for. An effect is a leaf of every wait chain.
-- Fencing: the claim refuses a lease not held (token, attempt, RUNNING) before `fn` runs; the commit
-- checks it again under FOR SHARE and raises PR409 when it is gone, so the transaction — the ledger
-- row and fn's writes — rolls back. A stale worker never applies an effect once its lease was lost.

-- The claim, in the caller's transaction. Returns `held` false (nothing written: roll back and
-- refuse) when the lease is not held; `claimed` true when this transaction now holds the ledger row
-- (run fn); else the key was applied before and `result` is what the first application stored. A
-- concurrent claim of the same key waits for that transaction, then sees its row (the SELECT after
-- the INSERT takes a new snapshot: a volatile function, READ COMMITTED).
CREATE OR REPLACE FUNCTION porter_effect_claim(p_id bigint, p_token bigint, p_attempt integer, p_tenant_id text, p_key text, p_job_id uuid)
RETURNS TABLE (held boolean, claimed boolean, result jsonb)
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  PERFORM 1 FROM jobs j
   WHERE j.id = p_id AND j.lease_token = p_token AND j.attempt = p_attempt AND j.state = 'RUNNING'
     FOR KEY SHARE;
  IF NOT FOUND THEN
    RETURN QUERY SELECT false, false, NULL::jsonb;
    RETURN;
  END IF;
  INSERT INTO job_effects (tenant_id, key, job_id, attempt) VALUES (p_tenant_id, p_key, p_job_id, p_attempt)
  ON CONFLICT DO NOTHING;
  IF FOUND THEN
    RETURN QUERY SELECT true, true, NULL::jsonb;
    RETURN;
  END IF;
  RETURN QUERY SELECT true, false, e.result FROM job_effects e WHERE e.tenant_id = p_tenant_id AND e.key = p_key;
END
$$;

-- The fence before COMMIT, in the claim's transaction: raises PR409 when the lease is no longer
-- held (the caller rolls back). Stores fn's result (NULL: nothing to write, the row has NULL) and
-- marks the attempt started if its start mark (sent asynchronously for a prefetched job:
-- start-jobs.ts) has not landed: an attempt that applied an effect is never recorded `not_started`.
CREATE OR REPLACE FUNCTION porter_effect_commit(p_id bigint, p_token bigint, p_attempt integer, p_tenant_id text, p_key text, p_result jsonb)
RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  v_started timestamptz;
BEGIN
  SELECT j.started_at INTO v_started FROM jobs j
   WHERE j.id = p_id AND j.lease_token = p_token AND j.attempt = p_attempt AND j.state = 'RUNNING'
     FOR SHARE;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'lease of job row % is no longer held by attempt %', p_id, p_attempt USING ERRCODE = 'PR409';
  END IF;
  IF v_started IS NULL THEN
    UPDATE jobs SET started_at = clock_timestamp() WHERE id = p_id AND started_at IS NULL;
  END IF;
  IF p_result IS NOT NULL THEN
    UPDATE job_effects SET result = p_result WHERE tenant_id = p_tenant_id AND key = p_key;
  END IF;
END
$$;
