import type { ReplicaReads } from "@porter/api";
import { KeyAuthCache, PolicyCache } from "@porter/core";
import { createPool } from "@porter/db/pool";
import { type ControlDb, createPrisma } from "@porter/db/prisma";
import { ReadReplica } from "@porter/db/read-replica";
import { readReplicaUrl, runtimeDatabaseUrl } from "@porter/db/runtime-role";
import type pg from "pg";
import { getEnv } from "./env";
import { getLogger } from "./logger";

// Process-wide state of the console, created on first use. Kept on globalThis so `next dev`'s
// module reloads reuse the pool instead of leaking connections.
const state = globalThis as typeof globalThis & {
  porterConsolePool?: pg.Pool;
  porterConsolePrisma?: ControlDb;
  porterConsolePolicyCache?: PolicyCache;
  porterConsoleReplica?: ReplicaReads | null;
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
 * The read replica of the console's heavy reads (PORTER_READ_DATABASE_URL, as the runtime role),
 * its router and a Prisma client on its pool; null without one. Created once per process.
 */
export const getReplica = (): ReplicaReads | null => {
  if (state.porterConsoleReplica !== undefined) return state.porterConsoleReplica;
  const env = getEnv();
  if (!env.PORTER_READ_DATABASE_URL) {
    state.porterConsoleReplica = null;
    return null;
  }
  const replica = createPool(readReplicaUrl(env.PORTER_READ_DATABASE_URL, consoleDatabaseUrl()), {
    max: 10,
    applicationName: "porter-console-replica",
    // A replica that does not answer is skipped within a second (its reads go to the primary).
    connectionTimeoutMillis: 1000,
    onError: (error) => getLogger().warn("idle replica connection failed", { err: error.message }),
  });
  const router = new ReadReplica({
    primary: getPool(),
    replica,
    maxLagS: env.PORTER_READ_MAX_LAG_S,
    onChange: (status) =>
      status.state === "up"
        ? getLogger().info("read replica serving reads", { lagS: status.lagS })
        : getLogger().warn("read replica not serving reads: the primary serves them", { state: status.state, reason: status.reason }),
  });
  const isSecureCookie = env.NEXTAUTH_URL?.startsWith("https://") ?? false;
  state.porterConsoleReplica = { router, prisma: createPrisma(replica), isSecureCookie };
  return state.porterConsoleReplica;
};

/**
 * Runs a heavy read where the replica router says (the replica when it has replayed `minLsn`, the
 * session's last write; the primary otherwise, and again on the primary when the replica failed or
 * found nothing); on the primary without a replica. For reads outside tRPC (the status pages).
 */
export const readOnReplica = <T>(minLsn: string | null, read: (db: pg.Pool) => Promise<T>): Promise<T> => {
  const replica = getReplica();
  return replica ? replica.router.run(minLsn, read) : read(getPool());
};

/**
 * The process's verified producer keys (core's KeyAuthCache): a key is re-verified at least every
 * 5 s (revocation takes effect within that) and its calls are paid for in its shared rate bucket a
 * handful at a time. On globalThis, so the producer front (serve.ts) and Next's routes share it.
 */
export const getKeyAuthCache = (): KeyAuthCache => (state.porterConsoleKeyAuthCache ??= new KeyAuthCache(getPool()));
