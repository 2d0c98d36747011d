import { defineHandler } from "@porter/sdk";
import { createHandlerMap } from "@porter/worker/handlers/handler-map";
import { createLogger } from "@porter/worker/logger";
import { PorterWorker } from "@porter/worker/runtime/worker";
import type pg from "pg";

/**
 * The probes' in-process worker on the `bench` pool: one no-op handler for `bench.job` that calls
 * `onRun` per job, no maintenance, warnings only — what the burn-down probes measure.
 */
export const startNoOpWorker = (options: { db: pg.Pool; connectionString: string; concurrency: number; prefetch?: number; onRun: () => void }) =>
  PorterWorker.start({
    db: options.db,
    connectionString: options.connectionString,
    poolId: "bench",
    concurrency: options.concurrency,
    ...(options.prefetch === undefined ? {} : { prefetch: options.prefetch }),
    logger: createLogger({ level: "warn" }),
    handlers: createHandlerMap([defineHandler({ type: "bench.job", run: async () => options.onRun() })]),
    maintenance: false,
  });
