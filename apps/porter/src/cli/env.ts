import { z } from "zod";
import { DEFAULT_ADMIN_EMAIL } from "../seed/demo";

// An empty variable (`DATABASE_URL= npm start`) means unset.
const optional = <T extends z.ZodType>(schema: T) => z.preprocess((v) => (v === "" ? undefined : v), schema.optional());

const ZCliEnv = z.object({
  /** PostgreSQL connection string; when unset the embedded server under `.porter/pg` is used. */
  DATABASE_URL: optional(z.string().regex(/^postgres(ql)?:\/\//, "must be a postgres:// connection string")),
  /** Connection string of the runtime role (console, workers, CLI commands but `migrate`), used as it is. */
  PORTER_APP_DATABASE_URL: optional(z.string().regex(/^postgres(ql)?:\/\//, "must be a postgres:// connection string")),
  /** Password of the runtime role; the migrator sets it on the role. Default: none, or for npm start/embedded `.porter/app-password`. */
  PORTER_APP_PASSWORD: optional(z.string().min(1)),
  /** Port of the console (`npm start`). */
  PORT: z.preprocess((v) => (v === "" ? undefined : v), z.coerce.number().int().min(1).max(65_535).default(3000)),
  /** Interface the console binds (`next start -H`); loopback unless set. */
  HOST: z.preprocess((v) => (v === "" ? undefined : v), z.string().default("127.0.0.1")),
  /**
   * First port of the workers' Prometheus endpoints under `npm start` (the worker of the n-th pool
   * listens on this + n, loopback); `0` or `off`: no endpoint. Default 9464 (the console is on PORT).
   */
  PORTER_WORKER_METRICS_PORT: z.preprocess(
    (v) => (v === "" || v === undefined ? undefined : v === "off" ? 0 : v),
    z.coerce.number().int().min(0).max(65_535).default(9464),
  ),
  /** next-auth secret; generated into `.porter/auth-secret` by `npm start` when unset. */
  AUTH_SECRET: optional(z.string().min(16, "must be at least 16 characters")),
  /** The console's public origin, for links the CLI prints (`tenants link`); default NEXTAUTH_URL, then http://HOST:PORT. */
  PORTER_PUBLIC_URL: optional(z.url({ protocol: /^https?$/, error: "must be an http(s) URL" })),
  /** The console's origin as next-auth knows it. */
  NEXTAUTH_URL: optional(z.url({ protocol: /^https?$/, error: "must be an http(s) URL" })),
  /** Login of the seeded admin. */
  PORTER_ADMIN_EMAIL: z.preprocess((v) => (v === "" ? undefined : v), z.email().default(DEFAULT_ADMIN_EMAIL)),
  /** Password of the seeded admin; generated and printed once when unset. */
  PORTER_ADMIN_PASSWORD: optional(z.string().min(8, "must be at least 8 characters")),
});

/** Environment of the operations CLI and the `npm start` launcher, validated once per process. */
export type CliEnv = z.infer<typeof ZCliEnv>;

/** Parses the environment; an invalid value fails fast with a message naming the variable. */
export const parseCliEnv = (source: NodeJS.ProcessEnv = process.env): CliEnv => {
  const parsed = ZCliEnv.safeParse(source);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join(".")}: ${i.message}`);
    throw new Error(`invalid environment:\n${lines.join("\n")}`);
  }
  return parsed.data;
};
