import { z } from "zod";

const ZEnv = z.object({
  /** PostgreSQL connection string of the owner; the worker connects as the runtime role derived from it. */
  DATABASE_URL: z.url().optional(),
  /** Connection string of the runtime role, used as it is (wins over DATABASE_URL). */
  PORTER_APP_DATABASE_URL: z.url().optional(),
  /** Password of the runtime role `porter_app` when it is derived from DATABASE_URL. */
  PORTER_APP_PASSWORD: z.string().min(1).optional(),
  /**
   * Connection string of the LISTEN and maintenance connections, used as it is (direct to
   * PostgreSQL when DATABASE_URL goes through a transaction-mode pooler); the `--listen-database-url` flag wins.
   */
  PORTER_LISTEN_DATABASE_URL: z.url().optional(),
  /** Most connections of the worker's pool (the `--db-pool-size` flag wins). */
  PORTER_DB_POOL_SIZE: z.coerce.number().int().min(3).max(1000).optional(),
  /** "off": no named prepared statements on the pool's connections (a transaction-mode pooler); the `--no-prepared-statements` flag wins. */
  PORTER_PREPARED_STATEMENTS: z.enum(["on", "off"]).optional(),
  /** Recorded with each worker and in structured errors; defaults to the package version. */
  PORTER_WORKER_VERSION: z.string().min(1).max(100).optional(),
  /** Drain grace period in milliseconds (the `--grace-ms` flag wins). */
  PORTER_DRAIN_GRACE_MS: z.coerce.number().int().min(0).optional(),
  /** A PEM file of extra certificate authorities the alert webhook's TLS trusts (besides the system's); verification stays on. */
  PORTER_WEBHOOK_CA_FILE: z.string().min(1).optional(),
  /** Port of the worker's Prometheus endpoint (`--metrics-port` wins); unset: none. */
  PORTER_WORKER_METRICS_PORT: z.coerce.number().int().min(0).max(65_535).optional(),
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
});

/** The worker app's environment, validated once. */
export type WorkerEnv = z.infer<typeof ZEnv>;

/** Parses the environment (empty values count as unset); an invalid value fails fast, naming it. */
export const parseEnv = (source: NodeJS.ProcessEnv = process.env): WorkerEnv => {
  const set = Object.fromEntries(Object.entries(source).filter(([, value]) => value !== undefined && value !== ""));
  const parsed = ZEnv.safeParse(set);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join(".")}: ${i.message}`);
    throw new Error(`invalid environment:\n${lines.join("\n")}`);
  }
  return parsed.data;
};
