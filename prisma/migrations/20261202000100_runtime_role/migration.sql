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

-- 2. The hot table's vacuum. The maintenance leader vacuums `jobs` when dead row versions pile up
--    (packages/core/src/sql/vacuum-hot-table.ts); VACUUM needs ownership, or on PostgreSQL >= 17
--    the MAINTAIN privilege the migrator grants. On older servers the runtime role cannot vacuum,
--    so autovacuum must do it alone: these settings make it visit `jobs` after a small fraction
--    of dead rows (5 % instead of 20 %, at least 1000) and run unthrottled (no cost delay), so a
--    visit finishes quickly. How often autovacuum looks at all is the server's
--    autovacuum_naptime (docs/architecture.md, "Database roles"). Harmless where the leader vacuums too.
ALTER TABLE jobs SET (
  autovacuum_vacuum_scale_factor = 0.05,
  autovacuum_vacuum_threshold = 1000,
  autovacuum_vacuum_cost_delay = 0
);
