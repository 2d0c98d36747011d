-- The audit log's guards (packages/core/src/control-plane/audit.ts writes it). A routine: this file is the one
-- source of both trigger functions and their triggers, re-applied by the migrator whenever its
-- checksum changes.
--
-- 1. Append-only at the database level, whatever role the application uses: UPDATE, DELETE and
--    TRUNCATE are refused by a statement trigger. It binds the runtime role, which cannot disable
--    or drop triggers (only the owner can); the role also holds INSERT and SELECT only
--    (packages/db/src/grants.ts).
CREATE OR REPLACE FUNCTION audit_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'audit_log is append-only' USING ERRCODE = 'insufficient_privilege';
END $$;
CREATE OR REPLACE TRIGGER audit_log_no_update BEFORE UPDATE OR DELETE OR TRUNCATE ON audit_log
  FOR EACH STATEMENT EXECUTE FUNCTION audit_log_append_only();

-- 2. The actor and time of a row come from the database, not from the caller: a BEFORE INSERT
--    trigger overwrites `at` with the transaction's clock and `actor` with the transaction-local
--    setting `porter.actor`, which the audit writer sets in the same transaction; an insert without
--    it fails. Forged `at`/`actor` columns are overwritten.
CREATE OR REPLACE FUNCTION audit_log_stamp() RETURNS trigger LANGUAGE plpgsql AS $$
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
CREATE OR REPLACE TRIGGER audit_log_stamp BEFORE INSERT ON audit_log FOR EACH ROW EXECUTE FUNCTION audit_log_stamp();
