-- Tenant webhooks (issue 13, deliverable 5): a tenant's endpoints receive a signed POST when one of
-- its jobs reaches a terminal state it subscribed to. webhook_endpoints (scope 'alerts' until now)
-- gains the 'tenant' scope, its events, a description and the rotation overlap (the previous
-- secret keeps signing until it expires, so a subscriber can switch without a gap).
ALTER TABLE webhook_endpoints DROP CONSTRAINT webhook_endpoints_scope_check;
ALTER TABLE webhook_endpoints ADD CONSTRAINT webhook_endpoints_scope_check CHECK (scope IN ('alerts', 'tenant'));
ALTER TABLE webhook_endpoints
  ADD COLUMN events                     text[] NOT NULL DEFAULT '{}',
  ADD COLUMN description                text,
  ADD COLUMN previous_secret            text,
  ADD COLUMN previous_secret_expires_at timestamptz(6),
  ADD CONSTRAINT webhook_endpoints_events_check CHECK (
    events <@ ARRAY['succeeded', 'dead', 'cancelled', 'expired']::text[]
    AND (scope <> 'tenant' OR cardinality(events) > 0)
  ),
  ADD CONSTRAINT webhook_endpoints_previous_secret_check CHECK ((previous_secret IS NULL) = (previous_secret_expires_at IS NULL));
-- The outbox trigger's join (tenant, enabled tenant-scope endpoints) and the console's list.
CREATE INDEX webhook_endpoints_tenant_idx ON webhook_endpoints (tenant_id) WHERE scope = 'tenant';

-- What the finished_jobs trigger (routines/webhooks.sql) leaves for the maintenance leader: one
-- row per (endpoint, job, terminal state, redrive count), with the event's data copied at the transition (the
-- finished row may be redriven or pruned before the drain). The drain enqueues the delivery job
-- and deletes the row in one transaction.
CREATE TABLE webhook_outbox (
  id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  endpoint_id text NOT NULL,
  job_id      uuid NOT NULL,
  state       job_state NOT NULL,
  job_type    text NOT NULL,
  tenant_id   text NOT NULL,
  attempt     integer NOT NULL,
  -- The job's redrive count at the transition: a redriven job that finishes again is a new event.
  redrive_count integer NOT NULL DEFAULT 0,
  finished_at timestamptz(6) NOT NULL,
  result      jsonb,
  error       jsonb,
  created_at  timestamptz(6) NOT NULL DEFAULT now(),
  CONSTRAINT webhook_outbox_key UNIQUE (endpoint_id, job_id, state, redrive_count)
);

-- The delivery log: one row per attempt of a webhook.deliver job, written by the handler (the
-- delivery job's own attempt record stays the source of truth). `error` names the host only,
-- never the URL's path or query. Kept 14 days (maintenance).
CREATE TABLE webhook_deliveries (
  id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  endpoint_id    text NOT NULL,
  job_id         uuid NOT NULL,
  event_id       text NOT NULL,
  event_type     text NOT NULL,
  subject_job_id uuid,
  attempt        integer NOT NULL,
  status_code    integer,
  error          text,
  duration_ms    integer NOT NULL,
  at             timestamptz(6) NOT NULL DEFAULT now()
);
CREATE INDEX webhook_deliveries_endpoint_idx ON webhook_deliveries (endpoint_id, id DESC);
CREATE INDEX webhook_deliveries_at_idx ON webhook_deliveries (at);

-- Networks webhook URLs may resolve into although they are private, loopback, link-local… (the
-- SSRF guard refuses those otherwise). Admins only.
CREATE TABLE webhook_allowed_networks (
  cidr       cidr PRIMARY KEY,
  note       text NOT NULL DEFAULT '',
  created_by text NOT NULL DEFAULT '',
  created_at timestamptz(6) NOT NULL DEFAULT now()
);
