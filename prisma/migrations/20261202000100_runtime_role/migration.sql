-- The console, workers and CLI connect as a least-privilege runtime role (created and granted by
-- the migrator from packages/db/src/grants.ts, not here: role names are per deployment, and
-- migrations stay role-agnostic). What the database itself must now guarantee:
--
-- 1. audit_log's actor and time come from the database, not from the caller. A BEFORE INSERT
--    trigger overwrites `at` with the transaction's clock and `actor` with the transaction-local
--    setting `porter.actor`, which the audit writer (packages/core/src/audit.ts) sets in the same
--    transaction; an insert without it fails. Forged `at`/`actor` columns are overwritten. The
--    append-only trigger of the init migration stays; it is effective now that the runtime role
--    cannot disable or drop triggers (only the owner can).
CREATE FUNCTION audit_log_stamp() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  v_actor text := current_setting('porter.actor', true);
BEGIN
  IF v_actor IS NULL OR v_actor = '' THEN
    RAISE EXCEPTION 'audit_log: no actor; the writer sets porter.actor in the same transaction (set_config(''porter.actor'', actor, true))'
      USING ERRCODE = 'not_null_violation';
  END IF;
  NEW.actor := v_actor;
  NEW.at := now();
  RETURN NEW;
END $$;
CREATE TRIGGER audit_log_stamp BEFORE INSERT ON audit_log FOR EACH ROW EXECUTE FUNCTION audit_log_stamp();

-- 2. Nothing changes for the hot table's vacuum here. The maintenance leader vacuums `jobs` when
--    dead row versions pile up (packages/core/src/sql/vacuum-hot-table.ts); VACUUM needs ownership,
--    or on PostgreSQL >= 17 the MAINTAIN privilege the migrator grants the runtime role. On older
--    servers the leader's vacuum is off (it logs that once) and autovacuum does the work alone,
--    with the aggressive per-table settings `jobs` has had since the init migration (1 % dead rows,
--    unthrottled). VACUUM cannot run inside a function, so no SECURITY DEFINER wrapper can lend
--    the runtime role the owner's right; see docs/architecture.md, "Database roles".
