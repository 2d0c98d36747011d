import { getPool, getReplica } from "../db";
import { getEnv } from "../env";
import { getLogger } from "../logger";
import { ConsoleMetrics } from "./console-metrics";

// One registry per console process, on globalThis so `next dev`'s module reloads reuse it (a
// second registry would register the process metrics twice).
const state = globalThis as typeof globalThis & { porterConsoleMetrics?: ConsoleMetrics };

/** The console's metrics registry (created on first scrape). */
export const getConsoleMetrics = (): ConsoleMetrics =>
  (state.porterConsoleMetrics ??= new ConsoleMetrics({
    db: getPool(),
    replica: getReplica()?.router,
    topTenants: getEnv().PORTER_METRICS_TOP_TENANTS,
    onReadError: (metric, error) => getLogger().warn("metrics scrape could not read the database", { metric, err: error.message }),
  }));
