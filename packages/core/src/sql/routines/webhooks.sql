-- Tenant webhooks (issue 13): a statement-level trigger on finished_jobs (a transition table,
-- never per row) leaves one webhook_outbox row per (enabled tenant endpoint subscribed to the
-- state, finished job), the maintenance leader drains it (core webhooks/outbox.ts). The first
-- statement is the fast path: with no enabled tenant endpoint (the common case) the trigger costs
-- one index-backed probe and never reads the transition table. webhook.deliver's own transitions
-- never produce webhooks (no loops). ON CONFLICT: a (endpoint, job, state, redrive count) is queued once; a redriven job that
-- finishes again is a new event.
-- Since migration 20261202002400_partitioned_history finished_jobs is partitioned; the trigger is
-- declared on the partitioned table and sees the rows of every partition.
CREATE OR REPLACE FUNCTION porter_webhook_outbox() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM webhook_endpoints WHERE scope = 'tenant' AND enabled) THEN
    RETURN NULL;
  END IF;
  INSERT INTO webhook_outbox (endpoint_id, job_id, state, job_type, tenant_id, attempt, redrive_count, finished_at, result, error)
  SELECT e.id, f.job_id, f.state, f.job_type, f.tenant_id, f.attempt, f.redrive_count, f.finished_at,
         CASE WHEN f.state = 'SUCCEEDED' THEN f.result END, f.error
    FROM webhook_new f
    JOIN webhook_endpoints e
      ON e.tenant_id = f.tenant_id AND e.scope = 'tenant' AND e.enabled AND lower(f.state::text) = ANY (e.events)
   WHERE f.job_type <> 'webhook.deliver'
   ORDER BY e.id, f.job_id
  ON CONFLICT ON CONSTRAINT webhook_outbox_key DO NOTHING;
  RETURN NULL;
END $$;
CREATE OR REPLACE TRIGGER finished_jobs_webhook_outbox AFTER INSERT ON finished_jobs
  REFERENCING NEW TABLE AS webhook_new FOR EACH STATEMENT EXECUTE FUNCTION porter_webhook_outbox();
