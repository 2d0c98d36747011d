-- The effect ledger behind `ctx.effect(key, fn)` (packages/core/src/sql/apply-effect.ts). A routine:
-- this file is the one source of the functions below, re-applied by the migrator whenever its
-- checksum changes. The table is job_effects (one row per (tenant, key), ever).
--
-- An effect is one transaction on one connection, in two messages around `fn`:
--   BEGIN; SELECT * FROM porter_effect_claim(…)         -- lease checked, ledger row claimed
--   … fn's own statements on the same connection …
--   SELECT porter_effect_commit(…); COMMIT             -- fence, result, start mark, commit
-- With `txOnly`, `fn` runs first and `SELECT porter_effect_close(…); COMMIT` claims the key at the
-- end. An effect given as one statement is that statement and `SELECT porter_effect_close(…)` in
-- one message of the extended protocol, closed by one Sync: one implicit transaction.
--
-- Locks on the job row, and why an effect closes no deadlock cycle:
-- - The claim checks the lease without locking the row (a plain read): the worker's batches on the
--   job rows — start marks (start-jobs.ts), lease extensions, checkpoints, acks — never wait on an
--   effect while its `fn` runs. (FOR KEY SHARE here cost ~15% of the effect's throughput in
--   probe/effect-ab.ts — a lock record per effect and multixacts with the start marks — and FOR
--   SHARE, before, blocked those batches behind `fn` and deadlocked them with each other.) The
--   ledger row is touched by nobody else but another claim of the same key, which waits for it
--   (ON CONFLICT) and then sees it applied.
-- - The commit locks the job row (porter_effect_fence) in its last message only, after `fn`: it blocks every
--   write that could move the lease (rescue, hand-back, ack, fail) until COMMIT, and once it has
--   the lock it waits on nothing more. It may wait for a batch holding the row, but holds nothing
--   such a batch waits for: an effect is a leaf of every wait chain.
-- Fencing: the claim refuses a lease not held (token, attempt, RUNNING) before `fn` runs; the commit
-- checks it again under that lock and raises PR409 when it is gone, so the transaction — the ledger
-- row and fn's writes — rolls back, and COMMIT is never reached. A stale worker never applies an
-- effect once its lease was lost: a rescue or hand-back that commits before the fence wins and the
-- effect is refused; one that comes after waits for the effect's COMMIT and sees its ledger row.
-- The lease checks compare `state` as text (fenceSql in fence.ts says why): the job row is found by
-- its primary key, never by reading the running set through jobs_running_idx.
-- What that trades: a rescue (lease expired: the worker stopped heartbeating) or a hand-back may
-- now take the job while `fn` runs — before, the effect's lock made the rescue pass over it. The
-- effect is then refused at commit: its writes through `tx` roll back and the next attempt applies
-- it once; anything `fn` did outside the database is repeated by that attempt, as after a crash
-- in `fn`.

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
   WHERE j.id = p_id AND j.lease_token = p_token AND j.attempt = p_attempt AND j.state::text = 'RUNNING';
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

-- The fence of an effect's last message (porter_effect_close, porter_effect_commit): the caller's
-- lease checked, and the job row locked until COMMIT, so that no write that moves the lease
-- (rescue, hand-back, ack, fail) lands between the check and the commit; PR409 when the lease is
-- gone. The attempt is marked started at the same time when its start mark (sent asynchronously
-- for a prefetched job: start-jobs.ts) has not landed: an attempt that applied an effect is never
-- recorded `not_started`. That mark is the lock — one row operation, the common case in a worker
-- whose handlers reach their effect before the start-mark batch lands; when the mark is there,
-- FOR SHARE takes the lock without writing a new row version. (Before: FOR SHARE always, then the
-- UPDATE when unmarked — two row operations and a lock record: effects 1.13× faster without them,
-- bench/src/probe/effect-ab.ts, docs/performance.md "ctx.effect".)
CREATE OR REPLACE FUNCTION porter_effect_fence(p_id bigint, p_token bigint, p_attempt integer)
RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  UPDATE jobs j SET started_at = clock_timestamp()
   WHERE j.id = p_id AND j.lease_token = p_token AND j.attempt = p_attempt AND j.state::text = 'RUNNING' AND j.started_at IS NULL;
  IF FOUND THEN
    RETURN;
  END IF;
  PERFORM 1 FROM jobs j
   WHERE j.id = p_id AND j.lease_token = p_token AND j.attempt = p_attempt AND j.state::text = 'RUNNING'
     FOR SHARE;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'lease of job row % is no longer held by attempt %', p_id, p_attempt USING ERRCODE = 'PR409';
  END IF;
END
$$;

-- An effect whose `fn` only writes through its transaction (`txOnly`) runs `fn` first and claims at
-- the end, in its commit message: `SELECT porter_effect_close(…); COMMIT`. The lease checked under
-- FOR SHARE as in porter_effect_commit (PR409 when gone), the start mark if it had not landed, then
-- the ledger row written once, with its result. When the key is there already (applied before, or
-- by a transaction this one waited for) it raises PR208: fn's writes roll back and the caller
-- reads the stored result. A concurrent close of the same key waits for this transaction (the
-- unique index) and then raises PR208 in its turn: at most one of them commits.
CREATE OR REPLACE FUNCTION porter_effect_close(p_id bigint, p_token bigint, p_attempt integer, p_tenant_id text, p_key text, p_job_id uuid, p_result jsonb)
RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  PERFORM porter_effect_fence(p_id, p_token, p_attempt);
  INSERT INTO job_effects (tenant_id, key, job_id, attempt, result) VALUES (p_tenant_id, p_key, p_job_id, p_attempt, p_result)
  ON CONFLICT DO NOTHING;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'effect % was applied before', p_key USING ERRCODE = 'PR208';
  END IF;
END
$$;

-- The fence before COMMIT, in the claim's transaction: raises PR409 when the lease is no longer
-- held (the caller rolls back). Stores fn's result (NULL: nothing to write, the row has NULL) and
-- marks the attempt started if its start mark (sent asynchronously for a prefetched job:
-- start-jobs.ts) has not landed: an attempt that applied an effect is never recorded `not_started`.
CREATE OR REPLACE FUNCTION porter_effect_commit(p_id bigint, p_token bigint, p_attempt integer, p_tenant_id text, p_key text, p_result jsonb)
RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  PERFORM porter_effect_fence(p_id, p_token, p_attempt);
  IF p_result IS NOT NULL THEN
    UPDATE job_effects SET result = p_result WHERE tenant_id = p_tenant_id AND key = p_key;
  END IF;
END
$$;
