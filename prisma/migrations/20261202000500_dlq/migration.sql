-- The dead-letter queue as a workflow (issue 12): failure groups maintained as jobs die, triage
-- (owner, status, reason code, an append-only thread), durable rate-limited redrives, alert rules
-- and their alerts, and signed webhook endpoints. The triggers and the fingerprint function are
-- routines (packages/core/src/sql/routines/dlq.sql); docs/operations.md is the runbook.

CREATE TYPE dlq_status AS ENUM ('new', 'investigating', 'fix_pending', 'resolved', 'ignored');

-- The fingerprint of a dead job's error (job type, code, class, normalized message), set by a
-- BEFORE INSERT trigger on DEAD rows only; the key of its failure group.
ALTER TABLE finished_jobs ADD COLUMN dlq_fingerprint text;
-- A group's dead jobs, newest first; the redrive of a group selects here.
CREATE INDEX finished_jobs_dlq_fingerprint_idx ON finished_jobs (dlq_fingerprint, finished_at)
  WHERE dlq_fingerprint IS NOT NULL;

-- Why a group failed, from an operator-defined list (admins edit it; seeded below).
CREATE TABLE dlq_reason_codes (
  code        text PRIMARY KEY CHECK (code ~ '^[a-z][a-z0-9_]{0,39}$'),
  label       text NOT NULL,
  description text NOT NULL DEFAULT '',
  -- Retired codes stay for the groups that carry them; they are no longer offered.
  archived    boolean NOT NULL DEFAULT false,
  created_at  timestamptz(6) NOT NULL DEFAULT now()
);
INSERT INTO dlq_reason_codes (code, label, description) VALUES
  ('bug', 'Bug', 'a defect in the handler or the producer; needs a code fix'),
  ('bad_input', 'Bad input', 'the payload or the data it references is invalid'),
  ('dependency_outage', 'Dependency outage', 'a provider or service the handler calls was down or failing'),
  ('config', 'Configuration', 'a wrong setting, credential or limit'),
  ('capacity', 'Capacity', 'not enough workers, quota or time; the work timed out or was throttled'),
  ('permission', 'Permission', 'the handler was not allowed to do the work'),
  ('unknown', 'Unknown', 'not yet understood');

-- One row per fingerprint: the failure group. Counts are maintained by the statement trigger on
-- finished_jobs (deaths add, deleting a dead row — redrive, retention — lowers dead_now).
CREATE TABLE dlq_groups (
  id                 bigserial PRIMARY KEY,
  fingerprint        text NOT NULL,
  job_type           text NOT NULL,
  error_code         text NOT NULL,
  error_class        text NOT NULL,
  normalized_message text NOT NULL,
  -- The latest death's message and job.
  sample_message     text NOT NULL,
  sample_job_id      uuid NOT NULL,
  -- Deaths ever recorded in the group, and those still DEAD (not redriven, not pruned).
  count              bigint NOT NULL DEFAULT 0,
  dead_now           bigint NOT NULL DEFAULT 0,
  first_seen         timestamptz(6) NOT NULL,
  last_seen          timestamptz(6) NOT NULL,
  -- Triage.
  status             dlq_status NOT NULL DEFAULT 'new',
  owner_id           text REFERENCES users(id),
  reason_code        text REFERENCES dlq_reason_codes(code),
  -- Ignored until this time, or until this many more deaths arrive (at least one is set when ignored).
  ignored_until      timestamptz(6),
  ignore_remaining   integer CHECK (ignore_remaining > 0),
  -- Reopened by a death after it was resolved or its ignore ran out.
  is_regression      boolean NOT NULL DEFAULT false,
  reopened_at        timestamptz(6),
  status_changed_at  timestamptz(6) NOT NULL DEFAULT now(),
  updated_at         timestamptz(6) NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX dlq_groups_fingerprint_key ON dlq_groups (fingerprint);
CREATE INDEX dlq_groups_last_seen_idx ON dlq_groups (last_seen);

-- Per group, the queues, tenants and worker versions its deaths came from, with counts.
CREATE TABLE dlq_group_facets (
  group_id bigint NOT NULL REFERENCES dlq_groups(id),
  kind     text NOT NULL CHECK (kind IN ('queue', 'tenant', 'worker_version')),
  value    text NOT NULL,
  count    bigint NOT NULL,
  PRIMARY KEY (group_id, kind, value)
);

-- Deaths per group and hour (the console's 24 h sparkline); pruned after 8 days.
CREATE TABLE dlq_group_hours (
  group_id bigint NOT NULL REFERENCES dlq_groups(id),
  hour     timestamptz(6) NOT NULL,
  deaths   integer NOT NULL,
  PRIMARY KEY (group_id, hour)
);

-- Every death, kept 14 days: the alert rules count new deaths per queue here, and a job's
-- timeline finds the groups it died into (their triage events are on it).
CREATE TABLE dlq_deaths (
  id       bigserial PRIMARY KEY,
  job_id   uuid NOT NULL,
  group_id bigint NOT NULL REFERENCES dlq_groups(id),
  queue_id text NOT NULL,
  tenant_id text NOT NULL,
  died_at  timestamptz(6) NOT NULL
);
CREATE INDEX dlq_deaths_job_id_idx ON dlq_deaths (job_id);
CREATE INDEX dlq_deaths_died_at_idx ON dlq_deaths (died_at);

-- The triage of one dead job when it needs its own (a group has many jobs; one may be special).
CREATE TABLE dlq_job_triage (
  job_id      uuid PRIMARY KEY,
  owner_id    text REFERENCES users(id),
  status      dlq_status NOT NULL DEFAULT 'new',
  reason_code text REFERENCES dlq_reason_codes(code),
  updated_at  timestamptz(6) NOT NULL DEFAULT now()
);

-- A group's (or a dead job's) thread: notes and every triage change, append-only. Also on the
-- timeline of the group's jobs.
CREATE TABLE dlq_events (
  id       bigserial PRIMARY KEY,
  group_id bigint REFERENCES dlq_groups(id),
  job_id   uuid,
  at       timestamptz(6) NOT NULL DEFAULT now(),
  actor    text NOT NULL,
  -- note | assigned | status | reason | reopened | redrive
  kind     text NOT NULL,
  body     text,
  data     jsonb,
  CHECK (group_id IS NOT NULL OR job_id IS NOT NULL)
);
CREATE INDEX dlq_events_group_id_idx ON dlq_events (group_id, id);
CREATE INDEX dlq_events_job_id_idx ON dlq_events (job_id) WHERE job_id IS NOT NULL;

-- A redrive as durable state: what was asked (selection frozen at `cutoff`), how fast, how far.
-- The maintenance leader runs it in batches (packages/core/src/dlq/redrive-runner.ts); each batch
-- moves its jobs and marks its items in one transaction, so a crash never redrives a job twice.
CREATE TABLE redrives (
  id            uuid PRIMARY KEY,
  created_at    timestamptz(6) NOT NULL DEFAULT now(),
  actor         text NOT NULL,
  reason        text,
  -- {"group_id"} | {"filter": {...}} | {"job_ids": [...]}, as asked.
  selection     jsonb NOT NULL,
  cutoff        timestamptz(6) NOT NULL,
  force         boolean NOT NULL DEFAULT false,
  rate_per_s    double precision NOT NULL DEFAULT 50 CHECK (rate_per_s > 0 AND rate_per_s <= 10000),
  status        text NOT NULL DEFAULT 'running' CHECK (status IN ('running', 'completed', 'aborted')),
  total         integer NOT NULL,
  redriven      integer NOT NULL DEFAULT 0,
  -- Skipped at run time, by reason: {"expired": n, "partial": n, ...}.
  skipped       jsonb NOT NULL DEFAULT '{}',
  -- The velocity's token bucket: tokens left at `last_batch_at` (capacity one batch).
  tokens        double precision NOT NULL DEFAULT 0,
  last_batch_at timestamptz(6),
  finished_at   timestamptz(6),
  aborted_by    text
);
CREATE INDEX redrives_running_idx ON redrives (created_at) WHERE status = 'running';

CREATE TABLE redrive_items (
  redrive_id uuid NOT NULL REFERENCES redrives(id),
  job_id     uuid NOT NULL,
  -- Creation order of the job (UUIDv7), the order items are redriven in.
  state      text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'redriven', 'skipped')),
  reason     text,
  done_at    timestamptz(6),
  PRIMARY KEY (redrive_id, job_id)
);
CREATE INDEX redrive_items_pending_idx ON redrive_items (redrive_id, job_id) WHERE state = 'pending';
CREATE INDEX redrive_items_job_id_idx ON redrive_items (job_id);

-- Alert rules on dead jobs, per queue or global (queue_id NULL). kind:
--   deaths_5m       new deaths in the last 5 minutes > threshold
--   unowned_age     dead jobs of unowned groups older than threshold seconds exist
--   group_reopened  a group reopened (a regression) in the last threshold seconds
CREATE TABLE alert_rules (
  id         bigserial PRIMARY KEY,
  queue_id   text REFERENCES queues(id),
  kind       text NOT NULL CHECK (kind IN ('deaths_5m', 'unowned_age', 'group_reopened')),
  threshold  double precision NOT NULL CHECK (threshold >= 0),
  enabled    boolean NOT NULL DEFAULT true,
  created_at timestamptz(6) NOT NULL DEFAULT now(),
  updated_at timestamptz(6) NOT NULL DEFAULT now()
);

-- An alert: a rule firing for a subject (the queue, or a group for group_reopened) until it resolves.
CREATE TABLE alerts (
  id          bigserial PRIMARY KEY,
  rule_id     bigint NOT NULL REFERENCES alert_rules(id),
  subject     text NOT NULL,
  state       text NOT NULL CHECK (state IN ('firing', 'resolved')),
  value       double precision NOT NULL,
  message     text NOT NULL,
  fired_at    timestamptz(6) NOT NULL,
  resolved_at timestamptz(6),
  updated_at  timestamptz(6) NOT NULL
);
-- At most one firing alert per rule and subject.
CREATE UNIQUE INDEX alerts_firing_key ON alerts (rule_id, subject) WHERE state = 'firing';
CREATE INDEX alerts_fired_at_idx ON alerts (fired_at);

-- Where signed webhooks go. scope 'alerts': the alert notifications (admin-configured). The
-- secret is a Standard Webhooks key (whsec_…), kept to sign; shown once when created.
CREATE TABLE webhook_endpoints (
  id         text PRIMARY KEY,
  scope      text NOT NULL CHECK (scope IN ('alerts')),
  url        text NOT NULL CHECK (url ~ '^https://'),
  secret     text NOT NULL,
  -- The tenant the delivery jobs run under (webhook.deliver jobs are ordinary Porter jobs).
  tenant_id  text NOT NULL REFERENCES tenants(id),
  enabled    boolean NOT NULL DEFAULT true,
  created_at timestamptz(6) NOT NULL DEFAULT now(),
  updated_at timestamptz(6) NOT NULL DEFAULT now()
);
