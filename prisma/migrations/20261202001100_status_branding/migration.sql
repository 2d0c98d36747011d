-- Tenant status page branding (issue 13, deliverable 3): the accent colour of the tenant's status
-- page (/status/<tenant_id>), `#rrggbb`; NULL = Porter's own blue. Validated by the contract
-- (ZAccentColor) and here, since the page puts it into a style attribute: only a colour fits.
-- status_origins (baseline) stops being reserved: the status pages read it for CSP frame-ancestors.
ALTER TABLE tenants ADD COLUMN status_accent text CHECK (status_accent ~ '^#[0-9a-fA-F]{6}$');
