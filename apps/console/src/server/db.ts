import { Registry } from "@porter/core";
import { createPool } from "@porter/db/pool";
import type pg from "pg";
import { getEnv } from "./env";
import { getLogger } from "./logger";

// Process-wide state of the console, created on first use. Kept on globalThis so `next dev`'s
// module reloads reuse the pool instead of leaking connections.
const state = globalThis as typeof globalThis & { porterConsolePool?: pg.Pool; porterConsoleRegistry?: Registry };

/** The console's connection pool (lazily created once per process). */
export const getPool = (): pg.Pool =>
  (state.porterConsolePool ??= createPool(getEnv().DATABASE_URL, {
    max: 10,
    applicationName: "porter-console",
    // Health and pages answer "database down" within seconds rather than hang.
    connectionTimeoutMillis: 3000,
    onError: (error) => getLogger().warn("idle database connection failed", { err: error.message }),
  }));

/** The job-type/tenant policy cache of enqueue; console edits show within a second. */
export const getRegistry = (): Registry => (state.porterConsoleRegistry ??= new Registry({ ttlMs: 1000 }));
