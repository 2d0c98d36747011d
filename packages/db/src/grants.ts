// The one declarative source of what the runtime role (console, workers, CLI) may do. The
// migrator applies it after the migrations (packages/db/src/runtime-role.ts); a test fails when a
// table of the schema has no entry here, so a new table never silently gets no (or all) rights.

/** A table privilege the runtime role may hold. Never TRUNCATE, REFERENCES or TRIGGER. */
export type TablePrivilege = "SELECT" | "INSERT" | "UPDATE" | "DELETE";

/**
 * Per table of the `public` schema, the privileges the runtime role needs, and nothing more.
 * `[]` means none (the role cannot even read the table). Sequences get USAGE (nextval for
 * bigserial ids and lease tokens); the schema USAGE only (no CREATE); no ownership, no DDL.
 *
 * UPDATE on a table the runtime only inserts into and deletes from is there because
 * `SELECT … FOR UPDATE` needs it (noted per entry).
 */
export const RUNTIME_GRANTS: Readonly<Record<string, readonly TablePrivilege[]>> = {
  // Control plane: the console creates and edits rows; nothing deletes them.
  pools: ["SELECT", "INSERT", "UPDATE"],
  resource_keys: ["SELECT", "INSERT", "UPDATE"],
  queues: ["SELECT", "INSERT", "UPDATE"],
  job_types: ["SELECT", "INSERT", "UPDATE"],
  tenants: ["SELECT", "INSERT", "UPDATE"],
  api_keys: ["SELECT", "INSERT", "UPDATE"],
  // Tenant status links (issue 13): issued, touched (last_used_at) and revoked; never deleted.
  tenant_status_links: ["SELECT", "INSERT", "UPDATE"],
  users: ["SELECT", "INSERT", "UPDATE"],
  // Data plane: enqueue inserts, claim/heartbeat/cancel update, ack/fail/expire move rows out.
  jobs: ["SELECT", "INSERT", "UPDATE", "DELETE"],
  // Redrive and prune lock finished rows (SELECT … FOR UPDATE), which needs UPDATE.
  finished_jobs: ["SELECT", "INSERT", "UPDATE", "DELETE"],
  // finished_jobs is partitioned by day (migration 20261202002400_partitioned_history); the daily
  // partitions are created and dropped by SECURITY DEFINER routines (routines/partitions.sql) and
  // reached through finished_jobs only. The default partition holds what no day covers and the
  // rows kept past their day's retirement: maintenance prunes it by name (core prune-finished.ts).
  finished_jobs_default: ["SELECT", "UPDATE", "DELETE"],
  // The first partition: the table as it was before the partitioning (an upgraded database's
  // history, every job created before the migration's next midnight), pruned row by row as before
  // until its day is retired; then it is gone and this entry names nothing.
  finished_jobs_p_first: ["SELECT", "UPDATE", "DELETE"],
  idempotency_keys: ["SELECT", "INSERT", "DELETE"],
  // Partitioned like finished_jobs, by the same days (migration 20261202003000_partitioned_timeline):
  // their day and default partitions, the first ones (the old tables) included, are reached through
  // these tables only; prune deletes a job's attempts and events through them.
  job_attempts: ["SELECT", "INSERT", "DELETE"],
  job_events: ["SELECT", "INSERT", "DELETE"],
  job_effects: ["SELECT", "INSERT", "UPDATE", "DELETE"],
  diag_effects: ["SELECT", "INSERT", "UPDATE"],
  workers: ["SELECT", "INSERT", "UPDATE", "DELETE"],
  fair_clocks: ["SELECT", "INSERT", "UPDATE"],
  // Token buckets (claim rates, API keys, sign-in throttles); a good sign-in clears its failures.
  rate_buckets: ["SELECT", "INSERT", "UPDATE", "DELETE"],
  // Append-only for the application: no UPDATE, DELETE or TRUNCATE, whatever the triggers say.
  audit_log: ["SELECT", "INSERT"],
  // Dead-letter triage (issue 12). Groups, facets, hours and deaths are written by the triggers of
  // packages/core/src/sql/routines/dlq.sql (as the role that kills the job); triage updates groups;
  // maintenance prunes hours and deaths.
  dlq_reason_codes: ["SELECT", "INSERT", "UPDATE"],
  dlq_groups: ["SELECT", "INSERT", "UPDATE"],
  dlq_group_facets: ["SELECT", "INSERT", "UPDATE"],
  dlq_group_hours: ["SELECT", "INSERT", "UPDATE", "DELETE"],
  dlq_deaths: ["SELECT", "INSERT", "DELETE"],
  dlq_job_triage: ["SELECT", "INSERT", "UPDATE"],
  // The thread is append-only for the application.
  dlq_events: ["SELECT", "INSERT"],
  // Redrives: created by the console/CLI, advanced by the maintenance leader (rows locked FOR UPDATE).
  redrives: ["SELECT", "INSERT", "UPDATE"],
  redrive_items: ["SELECT", "INSERT", "UPDATE"],
  alert_rules: ["SELECT", "INSERT", "UPDATE", "DELETE"],
  // DELETE: deleting an alert rule deletes its alerts (core dlq/alert-rules.ts).
  alerts: ["SELECT", "INSERT", "UPDATE", "DELETE"],
  webhook_endpoints: ["SELECT", "INSERT", "UPDATE", "DELETE"],
  // Tenant webhooks (issue 13): the finished_jobs trigger inserts (as the role finishing the job),
  // the maintenance leader drains (locks FOR UPDATE SKIP LOCKED, deletes).
  webhook_outbox: ["SELECT", "INSERT", "UPDATE", "DELETE"],
  // The delivery log: the handler inserts, maintenance prunes after 14 days.
  webhook_deliveries: ["SELECT", "INSERT", "DELETE"],
  // The SSRF guard's allow-list: admins add (re-adding updates the note) and remove networks.
  webhook_allowed_networks: ["SELECT", "INSERT", "UPDATE", "DELETE"],
  // The live status stream's log (issue 13): written by the triggers of
  // packages/core/src/sql/routines/stream.sql (as the writing role), read by the StreamHub,
  // pruned by maintenance after an hour.
  job_stream: ["SELECT", "INSERT", "DELETE"],
  // Flow rollups (issue 14): upserted by the job paths (enqueue, claim, ack, fail, rescue, expiry,
  // cancel), folded into hours and pruned by maintenance (core sql/flow-write.ts, flow-fold.ts).
  flow_rollups: ["SELECT", "INSERT", "UPDATE", "DELETE"],
  flow_histograms: ["SELECT", "INSERT", "UPDATE", "DELETE"],
  flow_retry_codes: ["SELECT", "INSERT", "UPDATE", "DELETE"],
  // Their never-pruned totals (the Prometheus counters): maintenance adds (core sql/flow-totals.ts)
  // and moves the one mark row; the console reads.
  flow_totals: ["SELECT", "INSERT", "UPDATE"],
  flow_histogram_totals: ["SELECT", "INSERT", "UPDATE"],
  flow_retry_code_totals: ["SELECT", "INSERT", "UPDATE"],
  flow_totals_mark: ["SELECT", "UPDATE"],
  // Per-queue gauges once a minute (issue 14): inserted and pruned by the maintenance leader
  // (core sql/queue-samples.ts), read by the console's charts.
  queue_samples: ["SELECT", "INSERT", "DELETE"],
  // The migrator's ledgers (migrations, routines): the runtime never reads or writes them.
  _porter_migrations: [],
  _porter_routines: [],
  // A day's retirement under way (routines/partitions.sql, SECURITY DEFINER): the runtime role never touches it.
  _porter_history_retirement: [],
};

/**
 * Tables whose VACUUM the runtime role may run (the maintenance leader vacuums the hot table).
 * Granted as MAINTAIN on PostgreSQL 17 and later; older servers have no such privilege, and
 * autovacuum's per-table settings (`jobs` in the baseline migration) do the work instead.
 */
export const RUNTIME_MAINTAIN_TABLES: readonly string[] = ["jobs"];

/** Which tables of a database have no entry in {@link RUNTIME_GRANTS}, and which entries name no table. */
export type GrantCoverage = { missing: string[]; stale: string[] };

/** Compares the tables of a database with {@link RUNTIME_GRANTS}. */
export function grantCoverage(tables: readonly string[], grants = RUNTIME_GRANTS): GrantCoverage {
  const present = new Set(tables);
  return {
    missing: tables.filter((table) => !Object.hasOwn(grants, table)).sort(),
    stale: Object.keys(grants)
      .filter((table) => !present.has(table))
      .sort(),
  };
}

/** The message for tables without an entry: says exactly what to add, and where. */
export function missingGrantsMessage(missing: readonly string[]): string {
  return (
    `table${missing.length === 1 ? "" : "s"} ${missing.map((t) => `"${t}"`).join(", ")} ha${missing.length === 1 ? "s" : "ve"} `
    + `no entry in RUNTIME_GRANTS (packages/db/src/grants.ts), so the runtime role's privileges on `
    + `${missing.length === 1 ? "it are" : "them are"} undecided. Add, listing only what the console, workers and CLI need ([] for nothing):\n`
    + missing.map((t) => `  ${t}: ["SELECT", "INSERT", "UPDATE", "DELETE"],`).join("\n")
  );
}
