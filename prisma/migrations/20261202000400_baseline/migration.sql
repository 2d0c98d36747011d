-- Porter's schema: tables, indexes, constraints. Mirrors prisma/schema.prisma (checked by
-- packages/db/src/schema-drift.int.test.ts); what Prisma cannot express (partial indexes, storage
-- parameters, checks) lives here.
--
-- The baseline squashes the eleven migrations of issues 1–9 (listed in `replaces` next to this
-- file): a fresh database gets the same schema from this one file, and a database migrated with
-- the old chain has this migration recorded as applied without running it (the migrator checks
-- that every replaced name is in its ledger). Columns are in the order the old chain left them
-- (a column added by ALTER TABLE comes last), so both databases dump identically.
--
-- Migrations hold schema only. Functions and triggers are routines: their one, current source is
-- packages/core/src/sql/routines/*.sql, which the migrator (re)creates after the migrations
-- whenever a file's checksum changes.

CREATE TYPE job_state AS ENUM ('READY', 'RUNNING', 'RETRY_WAIT', 'SUCCEEDED', 'DEAD', 'CANCELLED', 'EXPIRED');
-- not_started: the record of an attempt rescued before its handler started (its worker was lost,
-- or its lease expired, while it waited in the worker's prefetch buffer); such an attempt does not
-- count: the job's attempt number goes back, as for a drain's hand-back.
CREATE TYPE attempt_outcome AS ENUM ('succeeded', 'failed', 'timed_out', 'lease_expired', 'cancelled', 'handed_back', 'not_started');
CREATE TYPE role AS ENUM ('viewer', 'operator', 'admin');

-- Fencing tokens: every claim statement draws one value; a re-claimed job always gets a new one.
CREATE SEQUENCE lease_token_seq;

CREATE TABLE pools (
  id                 text PRIMARY KEY,
  description        text NOT NULL DEFAULT '',
  concurrency_cap    integer CHECK (concurrency_cap > 0),
  worker_concurrency integer NOT NULL DEFAULT 10 CHECK (worker_concurrency > 0),
  created_at         timestamptz(6) NOT NULL DEFAULT now(),
  updated_at         timestamptz(6) NOT NULL DEFAULT now()
);

CREATE TABLE resource_keys (
  id                text PRIMARY KEY,
  description       text NOT NULL DEFAULT '',
  concurrency_limit integer CHECK (concurrency_limit > 0),
  rate_per_second   double precision CHECK (rate_per_second > 0),
  burst             integer CHECK (burst > 0),
  current_limit     integer,
  throttled_until   timestamptz(6),
  created_at        timestamptz(6) NOT NULL DEFAULT now(),
  updated_at        timestamptz(6) NOT NULL DEFAULT now(),
  -- When the adaptive limit last moved (halved on a 429, raised by one while calm).
  adapted_at        timestamptz(6)
);

CREATE TABLE queues (
  id                   text PRIMARY KEY,
  pool_id              text NOT NULL REFERENCES pools(id),
  description          text NOT NULL DEFAULT '',
  default_priority     integer NOT NULL DEFAULT 50 CHECK (default_priority BETWEEN 0 AND 100),
  max_priority         integer NOT NULL DEFAULT 100 CHECK (max_priority BETWEEN 0 AND 100),
  concurrency_cap      integer CHECK (concurrency_cap > 0),
  lease_seconds        integer NOT NULL DEFAULT 30 CHECK (lease_seconds > 0),
  default_max_attempts integer NOT NULL DEFAULT 5 CHECK (default_max_attempts > 0),
  max_attempts         integer NOT NULL DEFAULT 25 CHECK (max_attempts > 0),
  backoff_base_ms      integer NOT NULL DEFAULT 1000 CHECK (backoff_base_ms >= 0),
  backoff_cap_ms       integer NOT NULL DEFAULT 300000 CHECK (backoff_cap_ms >= 0),
  default_timeout_s    integer NOT NULL DEFAULT 300 CHECK (default_timeout_s > 0),
  max_timeout_s        integer NOT NULL DEFAULT 3600 CHECK (max_timeout_s > 0),
  default_deadline_s   integer CHECK (default_deadline_s > 0),
  max_runtime_s        integer NOT NULL DEFAULT 3600 CHECK (max_runtime_s > 0),
  retention_s          integer NOT NULL DEFAULT 604800 CHECK (retention_s >= 0),
  aging_s              integer CHECK (aging_s > 0),
  paused               boolean NOT NULL DEFAULT false,
  resource_key_id      text REFERENCES resource_keys(id),
  created_at           timestamptz(6) NOT NULL DEFAULT now(),
  updated_at           timestamptz(6) NOT NULL DEFAULT now(),
  -- Weighted fair queuing: the virtual time of the work the queue handed out (the claim advances it).
  vclock               double precision NOT NULL DEFAULT 0,
  -- Over a tenant's admission limits: 'reject' (429 + Retry-After) or 'defer' (accepted at priority 0).
  admission            text NOT NULL DEFAULT 'reject' CHECK (admission IN ('reject', 'defer'))
);
CREATE INDEX queues_pool_id_idx ON queues (pool_id);

CREATE TABLE job_types (
  id                     text PRIMARY KEY,
  queue_id               text NOT NULL REFERENCES queues(id),
  description            text NOT NULL DEFAULT '',
  payload_schema_version text NOT NULL DEFAULT '1',
  timeout_s              integer CHECK (timeout_s > 0),
  created_at             timestamptz(6) NOT NULL DEFAULT now(),
  updated_at             timestamptz(6) NOT NULL DEFAULT now()
);
CREATE INDEX job_types_queue_id_idx ON job_types (queue_id);

CREATE TABLE tenants (
  id              text PRIMARY KEY,
  name            text NOT NULL DEFAULT '',
  weight          integer NOT NULL DEFAULT 1 CHECK (weight > 0),
  max_running     integer CHECK (max_running > 0),
  rate_per_second double precision CHECK (rate_per_second > 0),
  backlog_cap     integer CHECK (backlog_cap >= 0),
  max_priority    integer CHECK (max_priority BETWEEN 0 AND 100),
  max_attempts    integer CHECK (max_attempts > 0),
  status_origins  text[] NOT NULL DEFAULT '{}',
  created_at      timestamptz(6) NOT NULL DEFAULT now(),
  updated_at      timestamptz(6) NOT NULL DEFAULT now(),
  -- Jobs started per second for the tenant (token bucket, burst = max(1, rate)); null = unlimited.
  start_rate_per_second double precision CHECK (start_rate_per_second > 0)
);

-- The hot table: live jobs only. Lease columns (lease_until, heartbeat_at, lease_owner) are in no
-- index so heartbeats are HOT updates; fillfactor leaves room on each page for them. Autovacuum
-- runs early because every job passes through here and leaves one dead tuple per transition.
CREATE TABLE jobs (
  id                  bigserial PRIMARY KEY,
  job_id              uuid NOT NULL,
  job_type            text NOT NULL,
  queue_id            text NOT NULL,
  tenant_id           text NOT NULL,
  payload             jsonb NOT NULL,
  priority            integer NOT NULL,
  idempotency_key     text NOT NULL,
  state               job_state NOT NULL CHECK (state IN ('READY', 'RUNNING', 'RETRY_WAIT')),
  attempt             integer NOT NULL DEFAULT 0,
  max_attempts        integer NOT NULL,
  timeout_s           integer NOT NULL,
  not_before          timestamptz(6),
  deadline_at         timestamptz(6),
  run_at              timestamptz(6) NOT NULL,
  trace_id            text NOT NULL,
  contract_version    text NOT NULL DEFAULT '1.0',
  created_at          timestamptz(6) NOT NULL DEFAULT now(),
  claimed_at          timestamptz(6),
  lease_owner         text,
  lease_token         bigint,
  lease_until         timestamptz(6),
  heartbeat_at        timestamptz(6),
  cancel_requested_at timestamptz(6),
  cancel_reason       text,
  last_error          jsonb,
  redrive_count       integer NOT NULL DEFAULT 0,
  -- Weighted fair queuing: the job's virtual finish time, set at enqueue,
  --   vft = max(tenant's last vft in the queue, queue's virtual clock) + k / weight;
  -- claims take jobs in (priority DESC, vft) order.
  vft                 double precision NOT NULL DEFAULT 0,
  -- The producer's priority once aging has raised `priority` (null: never aged).
  base_priority       integer,
  -- When the current attempt's handler was allowed to start; NULL while the job only sits in a
  -- worker's prefetch buffer. The claim marks the rows that go straight into free slots, the worker
  -- the others when they leave its buffer (packages/core/src/sql/start-jobs.ts). No index: a HOT update.
  started_at          timestamptz(6)
) WITH (
  fillfactor = 70,
  autovacuum_vacuum_scale_factor = 0.01,
  autovacuum_vacuum_threshold = 1000,
  autovacuum_analyze_scale_factor = 0.02,
  autovacuum_vacuum_cost_delay = 0
);
CREATE UNIQUE INDEX jobs_job_id_key ON jobs (job_id);
-- Claimable work in claim order, per (queue, tenant): the claim probes each tenant listed in
-- fair_clocks with one scan. Holds READY and RETRY_WAIT only, so it shrinks as work is claimed and
-- stays an index scan at millions of finished or running jobs.
CREATE INDEX jobs_claim_idx ON jobs (queue_id, tenant_id, priority DESC, vft, id)
  WHERE state IN ('READY', 'RETRY_WAIT');
-- Running work per queue and tenant: caps are counted here, and lease rescue scans it.
CREATE INDEX jobs_running_idx ON jobs (queue_id, tenant_id) WHERE state = 'RUNNING';
-- Deadline expiry of live work.
CREATE INDEX jobs_deadline_idx ON jobs (deadline_at) WHERE deadline_at IS NOT NULL;
-- Priority aging (maintenance, queues with aging_s): the oldest waiting jobs below the top
-- priority, per queue, oldest first.
CREATE INDEX jobs_aging_idx ON jobs (queue_id, run_at) WHERE state IN ('READY', 'RETRY_WAIT') AND priority < 100;

-- Terminal jobs. Few indexes: every ack inserts one row here, and each index is one more entry to
-- write (and WAL to log) per finished job. The primary key is job_id, how every reader finds a
-- finished job; job ids are UUIDv7 (Unix milliseconds first, from the clock reading that becomes
-- created_at), so job_id order is creation order and the console's jobs browser pages both tables by
-- job_id DESC. The bigint id is only carried so that a redrive puts the row back into `jobs` under
-- its id; nothing looks a finished job up by it.
CREATE TABLE finished_jobs (
  id                  bigint NOT NULL,
  job_id              uuid NOT NULL,
  job_type            text NOT NULL,
  queue_id            text NOT NULL,
  tenant_id           text NOT NULL,
  payload             jsonb NOT NULL,
  priority            integer NOT NULL,
  idempotency_key     text NOT NULL,
  state               job_state NOT NULL CHECK (state IN ('SUCCEEDED', 'DEAD', 'CANCELLED', 'EXPIRED')),
  attempt             integer NOT NULL,
  max_attempts        integer NOT NULL,
  timeout_s           integer NOT NULL,
  not_before          timestamptz(6),
  deadline_at         timestamptz(6),
  run_at              timestamptz(6) NOT NULL,
  trace_id            text NOT NULL,
  contract_version    text NOT NULL DEFAULT '1.0',
  created_at          timestamptz(6) NOT NULL,
  claimed_at          timestamptz(6),
  last_worker         text,
  cancel_requested_at timestamptz(6),
  cancel_reason       text,
  redrive_count       integer NOT NULL DEFAULT 0,
  finished_at         timestamptz(6) NOT NULL,
  result              jsonb,
  error               jsonb,
  partial             boolean NOT NULL DEFAULT false,
  CONSTRAINT finished_jobs_pkey PRIMARY KEY (job_id)
);
-- Retention (per queue and state) and per-queue recent completions; the tenant's history.
CREATE INDEX finished_jobs_queue_id_state_finished_at_idx ON finished_jobs (queue_id, state, finished_at);
CREATE INDEX finished_jobs_tenant_id_finished_at_idx ON finished_jobs (tenant_id, finished_at);

-- (tenant, idempotency_key) → job, live or finished. A conflict compares the incoming job type and
-- payload with the stored job's (jsonb equality ignores key order), which this row points at; no
-- payload hash is stored. Retention deletes keys by their primary key.
CREATE TABLE idempotency_keys (
  tenant_id       text NOT NULL,
  idempotency_key text NOT NULL,
  job_id          uuid NOT NULL,
  created_at      timestamptz(6) NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, idempotency_key)
);

CREATE TABLE job_attempts (
  id           bigserial PRIMARY KEY,
  job_id       uuid NOT NULL,
  attempt      integer NOT NULL,
  worker_id    text,
  lease_token  bigint,
  started_at   timestamptz(6) NOT NULL,
  finished_at  timestamptz(6) NOT NULL,
  heartbeat_at timestamptz(6),
  outcome      attempt_outcome NOT NULL,
  error        jsonb,
  retry_at     timestamptz(6)
);
CREATE INDEX job_attempts_job_id_idx ON job_attempts (job_id);

CREATE TABLE job_events (
  id      bigserial PRIMARY KEY,
  job_id  uuid NOT NULL,
  at      timestamptz(6) NOT NULL DEFAULT now(),
  kind    text NOT NULL,
  attempt integer,
  actor   text,
  data    jsonb
);
CREATE INDEX job_events_job_id_idx ON job_events (job_id);

CREATE TABLE job_effects (
  tenant_id  text NOT NULL,
  key        text NOT NULL,
  job_id     uuid NOT NULL,
  attempt    integer NOT NULL,
  applied_at timestamptz(6) NOT NULL DEFAULT now(),
  result     jsonb,
  PRIMARY KEY (tenant_id, key)
);
CREATE INDEX job_effects_job_id_idx ON job_effects (job_id);

CREATE TABLE diag_effects (
  key     text PRIMARY KEY,
  applied integer NOT NULL DEFAULT 0
);

CREATE TABLE api_keys (
  id           text PRIMARY KEY,
  name         text NOT NULL DEFAULT '',
  secret_hash  text NOT NULL,
  tenant_ids   text[] NOT NULL,
  job_types    text[] NOT NULL,
  created_by   text NOT NULL DEFAULT '',
  created_at   timestamptz(6) NOT NULL DEFAULT now(),
  last_used_at timestamptz(6),
  revoked_at   timestamptz(6),
  -- Producer calls per second allowed to this key (token bucket, burst = max(1, rate));
  -- null = the console's default (PORTER_API_KEY_RATE).
  rate_per_second double precision CHECK (rate_per_second > 0)
);

CREATE TABLE users (
  id            text PRIMARY KEY,
  email         text NOT NULL,
  name          text NOT NULL DEFAULT '',
  password_hash text NOT NULL,
  role          role NOT NULL,
  created_at    timestamptz(6) NOT NULL DEFAULT now(),
  disabled_at   timestamptz(6),
  -- Session revocation: every console session (JWT) carries the version it was issued under;
  -- sign-out, a password change or reset, a role change and disabling the account bump it.
  session_version integer NOT NULL DEFAULT 0
);
CREATE UNIQUE INDEX users_email_key ON users (email);

CREATE TABLE audit_log (
  id          bigserial PRIMARY KEY,
  at          timestamptz(6) NOT NULL DEFAULT now(),
  actor       text NOT NULL,
  action      text NOT NULL,
  object_type text NOT NULL,
  object_id   text NOT NULL,
  before      jsonb,
  after       jsonb,
  reason      text
);
CREATE INDEX audit_log_object_type_object_id_idx ON audit_log (object_type, object_id);
CREATE INDEX audit_log_at_idx ON audit_log (at);

-- Append-only, and stamped with the database's clock and the writer's `porter.actor`, by the
-- triggers of packages/core/src/sql/routines/audit.sql.

CREATE TABLE workers (
  id           text PRIMARY KEY,
  pool_id      text NOT NULL REFERENCES pools(id),
  host         text NOT NULL,
  pid          integer NOT NULL,
  version      text NOT NULL,
  concurrency  integer NOT NULL,
  running      integer NOT NULL DEFAULT 0,
  draining     boolean NOT NULL DEFAULT false,
  started_at   timestamptz(6) NOT NULL DEFAULT now(),
  heartbeat_at timestamptz(6) NOT NULL DEFAULT now(),
  stopped_at   timestamptz(6)
);
CREATE INDEX workers_pool_id_idx ON workers (pool_id);

-- Weighted fair queuing: each (queue, tenant) that ever enqueued, with its last virtual finish
-- time. The claim probes the tenants listed here for ready work. The statements that insert jobs
-- (enqueue's reservation, redrive: packages/core/src/sql/fair-clock.ts) write these rows; anything
-- else that inserts jobs must insert their (queue, tenant) row too, or the claim will not look at
-- that tenant.
CREATE TABLE fair_clocks (
  queue_id text NOT NULL,
  tenant_id text NOT NULL,
  last_vft double precision NOT NULL,
  PRIMARY KEY (queue_id, tenant_id)
);

-- Token buckets (packages/core/src/sql/routines/tokens.sql for the arithmetic). scope:
-- 'tenant_start' and 'resource' (claim start rates), 'tenant_admit' (tenant admission), 'api_key'
-- (calls of a key), 'api_key_fail' (failed secrets for a real key id), 'api_key_fail_addr' (failed
-- key authentications from a client address), 'signin_account' / 'signin_addr' (failed console
-- sign-ins per email and per client address).
CREATE TABLE rate_buckets (
  scope text NOT NULL,
  key text NOT NULL,
  tokens double precision NOT NULL,
  updated_at timestamptz(6) NOT NULL,
  PRIMARY KEY (scope, key)
);

-- Roles and privileges are not here: the migrator creates the least-privilege runtime role and
-- grants it from packages/db/src/grants.ts (role names are per deployment; migrations stay
-- role-agnostic). VACUUM of the hot table: the maintenance leader runs it where the role holds
-- MAINTAIN (PostgreSQL >= 17); elsewhere autovacuum alone, with the settings `jobs` has above.
