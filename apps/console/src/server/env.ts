import { z } from "zod";

const ZEnv = z
  .object({
    /**
     * PostgreSQL connection string (`npm start` sets it, embedded or yours). The console connects
     * as the runtime role: PORTER_APP_DATABASE_URL when set, else this URL with user porter_app and
     * PORTER_APP_PASSWORD. One of the two URLs is required at runtime.
     */
    DATABASE_URL: z.string().min(1).optional(),
    PORTER_APP_DATABASE_URL: z.string().min(1).optional(),
    PORTER_APP_PASSWORD: z.string().min(1).optional(),
    /**
     * A streaming replica of DATABASE_URL's server (docs/scaling.md "Replica reads"): the console's
     * heavy reads go there when it keeps up. Connected as the runtime role, like the primary.
     */
    PORTER_READ_DATABASE_URL: z.string().min(1).optional(),
    /** Replay further behind than this many seconds sends the replica's reads to the primary. */
    PORTER_READ_MAX_LAG_S: z.coerce.number().positive().default(10),
    PORT: z.coerce.number().int().min(1).max(65_535).default(3000),
    /** Interface the console listens on (`npm start` passes it to `next start -H`). Loopback by default. */
    HOST: z.string().min(1).default("127.0.0.1"),
    /** Bearer token for /api/metrics; without it the endpoint is open only when HOST is loopback. */
    PORTER_METRICS_TOKEN: z.string().min(16, "at least 16 characters").optional(),
    /** Tenants labelled by id in /api/metrics (the top N by live jobs); the rest are tenant="other". */
    PORTER_METRICS_TOP_TENANTS: z.coerce.number().int().min(0).max(1000).default(20),
    /** Producer calls per second of an API key without its own rate (token bucket, burst = rate). */
    PORTER_API_KEY_RATE: z.coerce.number().positive().default(500),
    /** Ceiling of a whole request body to /api/trpc, refused with 413 before parsing. */
    PORTER_MAX_BODY_BYTES: z.coerce
      .number()
      .int()
      .min(1024)
      .default(8 * 1024 * 1024),
    /** Ceiling of one job's payload; bigger payloads must pass a reference (413). */
    PORTER_MAX_PAYLOAD_BYTES: z.coerce
      .number()
      .int()
      .min(1)
      .default(64 * 1024),
    /** Live status streams (SSE) one credential — an API key or a status link — may hold at once per console process; 429 beyond. */
    PORTER_SSE_MAX_PER_CREDENTIAL: z.coerce.number().int().min(1).default(20),
    LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
    /** Encrypts console session cookies (`npm start` generates one into .porter/auth-secret). */
    AUTH_SECRET: z.string({ error: "required (a random secret of at least 16 characters; npm start generates one)" }).min(16, "at least 16 characters"),
    /** The console's public URL (sign-in redirects, secure cookies when https, trusted Origin). */
    NEXTAUTH_URL: z.url().optional(),
  })
  .refine((env) => env.DATABASE_URL || env.PORTER_APP_DATABASE_URL, {
    path: ["DATABASE_URL"],
    message: "required (a postgres:// connection string; or PORTER_APP_DATABASE_URL, the runtime role's)",
  });

/** The console's environment. */
export type ConsoleEnv = z.infer<typeof ZEnv>;

let parsed: ConsoleEnv | undefined;

/**
 * The environment, validated once per process (at boot by `instrumentation.ts`, so a bad value
 * fails fast; lazily here so `next build` needs no database). Empty values count as unset.
 */
export const getEnv = (): ConsoleEnv => {
  if (parsed) return parsed;
  const set = Object.fromEntries(Object.entries(process.env).filter(([, value]) => value !== undefined && value !== ""));
  const result = ZEnv.safeParse(set);
  if (!result.success) {
    const lines = result.error.issues.map((issue) => `  ${issue.path.join(".")}: ${issue.message}`);
    throw new Error(`invalid environment:\n${lines.join("\n")}`);
  }
  parsed = result.data;
  return parsed;
};
