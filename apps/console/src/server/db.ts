import { KeyAuthCache, PolicyCache } from "@porter/core";
import { createPool } from "@porter/db/pool";
import { type ControlDb, createPrisma } from "@porter/db/prisma";
import { runtimeDatabaseUrl } from "@porter/db/runtime-role";
import type pg from "pg";
import { getEnv } from "./env";
import { getLogger } from "./logger";

// Process-wide state of the console, created on first use. Kept on globalThis so `next dev`'s
// module reloads reuse the pool instead of leaking connections.
const state = globalThis as typeof globalThis & {
  porterConsolePool?: pg.Pool;
  porterConsolePrisma?: ControlDb;
  porterConsolePolicyCache?: PolicyCache;
  porterConsoleKeyAuthCache?: KeyAuthCache;
};

/** The console's connection string: the runtime role's (README "Configuration"), never the owner's. */
export const consoleDatabaseUrl = (): string => {
  const env = getEnv();
  return runtimeDatabaseUrl({ databaseUrl: env.DATABASE_URL, appDatabaseUrl: env.PORTER_APP_DATABASE_URL, appPassword: env.PORTER_APP_PASSWORD });
};

/** The console's connection pool (lazily created once per process). */
export const getPool = (): pg.Pool =>
  (state.porterConsolePool ??= createPool(consoleDatabaseUrl(), {
    max: 10,
    applicationName: "porter-console",
    // Health and pages answer "database down" within seconds rather than hang.
    connectionTimeoutMillis: 3000,
    onError: (error) => getLogger().warn("idle database connection failed", { err: error.message }),
  }));

/**
 * The console's Prisma client for the control plane (lazily created once per process). It shares
 * the pool of {@link getPool}: it holds no connections of its own, so there is nothing more to close
 * than the pool when the process ends.
 */
export const getPrisma = (): ControlDb => (state.porterConsolePrisma ??= createPrisma(getPool()));

/** The job-type/tenant policy cache of enqueue; console edits show within a second. */
export const getPolicyCache = (): PolicyCache => (state.porterConsolePolicyCache ??= new PolicyCache({ ttlMs: 1000 }));

/**
 * The process's verified producer keys (core's KeyAuthCache): a key is re-verified at least every
 * 5 s (revocation takes effect within that) and its calls are paid for in its shared rate bucket a
 * handful at a time. On globalThis, so the producer front (serve.ts) and Next's routes share it.
 */
export const getKeyAuthCache = (): KeyAuthCache => (state.porterConsoleKeyAuthCache ??= new KeyAuthCache(getPool()));
