// The library entry point: a worker inside an existing service (`startWorker`), and what the
// `porter-worker` bin runs too, so both have the same semantics.
import { createPool } from "@porter/db/pool";
import { inspectConnectionRole, privilegeWarning } from "@porter/db/runtime-role";
import type { AnyHandler } from "@porter/sdk";
import { checkOwnHandlers, HandlerSetupError, isHandler, replacedDemoTypes, withOwnHandlers } from "../handlers/own-handlers";
import { createLogger, type Logger } from "../logger";
import { untilReachable } from "./until-reachable";
import { type DrainReport, PorterWorker } from "./worker";
import { WORKER_DEFAULTS, type WorkerOptions } from "./worker-options";

export type StartWorkerOptions = {
  /**
   * PostgreSQL connection string, used as given: it should be the runtime role `porter_app`'s
   * (README "Configuration"); a superuser or the tables' owner gets a warning in the log.
   */
  connectionString: string;
  /**
   * Connection string of the worker's two session-bound connections: the LISTEN connection
   * (notifications) and the maintenance connection (a session advisory lock elects the leader).
   * Default `connectionString`. Behind a transaction-mode pooler (PgBouncer) this must reach
   * PostgreSQL directly: a pooler in transaction mode neither delivers notifications nor keeps a
   * session lock. docs/scaling.md "Connection budget".
   */
  listenConnectionString?: string;
  /**
   * Most connections of the worker's pool (claims, the completer, heartbeats, effects). Default
   * `min(concurrency + 6, 40)`. The worker opens at most this many plus the LISTEN connection plus
   * the maintenance connection (docs/scaling.md "Connection budget").
   */
  poolSize?: number;
  /**
   * Named prepared statements on the pool's connections. Default true. `false` for a pooler in
   * transaction mode that does not track them (PgBouncer before 1.21, or without
   * `max_prepared_statements`): each query is then parsed and planned on every run.
   */
  preparedStatements?: boolean;
  /** The pool (lane) whose queues this worker serves. */
  pool: string;
  /**
   * Your handlers (made with `defineHandler`), added to the built-in diag.* ones (reserved); one for
   * a demo job type replaces its simulated handler. Each must be for a job type the registry knows
   * whose queue is in `pool`.
   */
  handlers?: readonly AnyHandler[];
  /** Jobs run at once. Default: the pool's `worker_concurrency`. */
  concurrency?: number;
  /** Porter's logger (`createLogger` of @porter/worker: message first, fields after). Default: one at LOG_LEVEL or info. */
  logger?: Logger;
  /**
   * "skip": handlers of job types in other pools are left out instead of refused (one module for
   * every pool's worker, as `npm start` runs them). Default "error".
   */
  otherPools?: "error" | "skip";
} & Pick<WorkerOptions, "version" | "workerId" | "graceMs" | "hangGraceMs" | "prefetch" | "maintenance" | "startTimeoutMs" | "webhook" | "probe">;

/**
 * The smallest pool a worker runs with: a claim, the completer's ack batch and a heartbeat batch
 * may be under way at once; with fewer they queue behind each other (an effect waits for one too).
 */
export const MIN_POOL_SIZE = 3;

/**
 * The worker pool's size when `poolSize` is not given: claims, the completer (2) and heartbeats
 * need a few connections, effects one each while they run; never more than 40.
 */
export const defaultPoolSize = (concurrency: number | undefined): number => Math.min((concurrency ?? 20) + 6, 40);

/** A running worker: `drain()` stops it (claims stop, in-flight work finishes or is handed back, its connections close). */
export type StartedWorker = {
  readonly id: string;
  readonly concurrency: number;
  /** Attempts running now. */
  readonly running: number;
  /** Claimed jobs waiting in the prefetch buffer for a slot. */
  readonly buffered: number;
  /** The prefetch in force. */
  readonly prefetchLimit: number;
  /** Graceful drain (PorterWorker.drain), then the worker's own connections are closed. Idempotent. */
  drain: (options?: { graceMs?: number }) => Promise<DrainReport>;
  /** Ends a drain's grace period now: unfinished work is handed back at once. */
  force: () => void;
};

/**
 * Starts a worker for one pool in this process: the same PorterWorker as `porter-worker` (claims,
 * leases, maintenance leadership, worker liveness), with its own connection pool. Installs no
 * signal handlers: stopping is the host's call (`await worker.drain()` on its SIGTERM). A handler
 * set that cannot run rejects with a HandlerSetupError before the worker registers.
 */
export const startWorker = async (options: StartWorkerOptions): Promise<StartedWorker> => {
  const given = options.handlers ?? [];
  const notHandler = given.findIndex((h) => !isHandler(h));
  if (notHandler >= 0) throw new HandlerSetupError(`handlers[${notHandler}] is not a handler (make handlers with defineHandler from @porter/sdk)`);
  // Clashes first, with every handler given (also those a "skip" leaves out).
  withOwnHandlers(given);
  const logger = options.logger ?? createLogger({ level: process.env.LOG_LEVEL || "info" });
  if (options.poolSize !== undefined && (!Number.isInteger(options.poolSize) || options.poolSize < MIN_POOL_SIZE)) {
    throw new RangeError(`poolSize must be an integer ≥ ${MIN_POOL_SIZE}, got ${options.poolSize}`);
  }
  const db = createPool(options.connectionString, {
    max: options.poolSize ?? defaultPoolSize(options.concurrency),
    applicationName: `porter-worker:${options.pool}`,
    connectionTimeoutMillis: 60_000,
    onError: (error) => logger.warn("idle database connection failed", { err: error }),
    preparedStatements: options.preparedStatements ?? true,
  });
  let worker: PorterWorker;
  let own: AnyHandler[];
  try {
    const startTimeoutMs = options.startTimeoutMs ?? WORKER_DEFAULTS.startTimeoutMs;
    own = await untilReachable(() => checkOwnHandlers(db, options.pool, given, options.otherPools), logger, "checking the handlers", startTimeoutMs);
    worker = await PorterWorker.start({
      db,
      connectionString: options.connectionString,
      listenConnectionString: options.listenConnectionString,
      poolId: options.pool,
      concurrency: options.concurrency,
      logger,
      handlers: withOwnHandlers(own, { db, ...options.webhook }),
      version: options.version,
      workerId: options.workerId,
      graceMs: options.graceMs,
      hangGraceMs: options.hangGraceMs,
      prefetch: options.prefetch,
      maintenance: options.maintenance,
      webhook: options.webhook,
      startTimeoutMs,
      probe: options.probe,
    });
  } catch (error) {
    await db.end().catch(() => undefined);
    throw error;
  }
  const replaced = replacedDemoTypes(own);
  if (replaced.length > 0) logger.info("your handlers replace the simulated demo handlers", { jobTypes: replaced });
  void inspectConnectionRole(db)
    .then((role) => {
      const warning = privilegeWarning(role);
      if (warning) logger.warn(warning);
    })
    .catch((error: unknown) => logger.warn("could not check the connection's privileges", { err: error }));

  let drained: Promise<DrainReport> | undefined;
  return {
    id: worker.id,
    concurrency: worker.concurrency,
    get running() {
      return worker.running;
    },
    get buffered() {
      return worker.buffered;
    },
    get prefetchLimit() {
      return worker.prefetchLimit;
    },
    drain: (drainOptions) =>
      (drained ??= worker.drain(drainOptions).then(async (report) => {
        await db.end().catch(() => undefined);
        return report;
      })),
    force: () => worker.force(),
  };
};
