-- Tenant status links (issue 13, deliverable 2): an operator issues a link that lets a tenant see
-- its own status page without a console account. The link's token (32 random bytes, base64url) is
-- shown once and never stored: only its SHA-256 is, under a unique index, so resolving a token is
-- one index lookup on the hash (no constant-time compare needed: the hash is what is looked up).
-- job_types limits what the page shows ('{}' = every type). A link stops working when it expires
-- or is revoked; the row is kept (audit, the console's list).
CREATE TABLE tenant_status_links (
  id           text PRIMARY KEY,
  tenant_id    text NOT NULL REFERENCES tenants (id),
  token_hash   text NOT NULL,
  job_types    text[] NOT NULL DEFAULT '{}',
  expires_at   timestamptz(6) NOT NULL,
  revoked_at   timestamptz(6),
  created_by   text NOT NULL DEFAULT '',
  created_at   timestamptz(6) NOT NULL DEFAULT now(),
  -- Written when the link is followed or its page is viewed (at most once a minute).
  last_used_at timestamptz(6),
  CHECK (expires_at > created_at)
);
CREATE UNIQUE INDEX tenant_status_links_token_hash_key ON tenant_status_links (token_hash);
CREATE INDEX tenant_status_links_tenant_idx ON tenant_status_links (tenant_id, created_at DESC);
