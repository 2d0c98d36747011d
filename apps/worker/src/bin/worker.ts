// One worker process for one pool: `porter-worker --pool <name>` (the bin entry, porter-worker.mjs)
// or `npm run worker -- --pool <name>`, which execs the same entry.
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { runtimeDatabaseUrl, runtimeLoginHint } from "@porter/db/runtime-role";
import { isSafeError, serializeError } from "@porter/db/safe-error";
import type { AnyHandler } from "@porter/sdk";
import { parseEnv } from "../env";
import { HandlerSetupError, loadHandlerModule } from "../handlers/own-handlers";
import { createLogger } from "../logger";
import { startMetricsServer } from "../metrics/metrics-server";
import { WorkerMetrics } from "../metrics/worker-metrics";
import { MIN_POOL_SIZE, type StartedWorker, startWorker } from "../runtime/start-worker";
import { createStopSignals } from "../runtime/stop-signals";

const USAGE = `Usage: porter-worker --pool <name> [options]
       npm run worker -- --pool <name> [options]

Runs one worker process for a pool: claims its queues' jobs, runs their handlers, heartbeats
leases, and on SIGTERM/SIGINT drains. The same signal again within a second is the same stop
(a process group's kill arrives directly and through npm); one later than that hands unfinished
work back at once.

A handler set that cannot run stops it at start with one line and exit code 2: a --handlers
module that does not load, an export that is not a handler, two handlers for one job type or one
for a diag.* type, a job type the registry does not know or whose queue is in another pool.

Options:
  --pool <name>          pool (lane) to serve, e.g. interactive, background, agents (required)
  --concurrency <n>      jobs run at once (default: the pool's worker_concurrency)
  --grace-ms <ms>        drain grace period (default: PORTER_DRAIN_GRACE_MS or 10000)
  --hang-grace-ms <ms>   how long a handler may ignore its aborted signal (default 2000)
  --prefetch <n>         jobs claimed ahead of free slots (default: adaptive, ~50 ms of work at the start rate, ≤ 1000)
  --handlers <module>    also run the handlers this module exports (made with defineHandler; a .ts
                         or .js file, relative to the working directory); diag.* stay, a handler
                         for a demo job type replaces its simulated one
  --skip-other-pools     leave out --handlers' handlers of job types in other pools instead of
                         refusing to start (one module for every pool's worker, as npm start does)
  --no-maintenance       never take the maintenance leadership
  --db-pool-size <n>     most connections of the worker's pool, ≥ 3 (default: PORTER_DB_POOL_SIZE,
                         else min(concurrency + 6, 40)); the process opens at most this many plus
                         the LISTEN and the maintenance connection
  --listen-database-url <url>  connection string of the LISTEN and maintenance connections, used as
                         it is (default: PORTER_LISTEN_DATABASE_URL, else the pool's); set it to a
                         direct connection when DATABASE_URL goes through PgBouncer in
                         transaction mode (notifications and the leader's session lock need a session)
  --no-prepared-statements  send the pool's queries unnamed (default: PORTER_PREPARED_STATEMENTS, on);
                         for a transaction-mode pooler that does not track prepared statements
  --metrics-port <n>     serve Prometheus metrics of this process on GET /metrics at this port
                         (default: PORTER_WORKER_METRICS_PORT; unset: no endpoint; 0: a free port)
  --metrics-host <host>  interface of the metrics endpoint (default 127.0.0.1; 0.0.0.0 to widen)
  -h, --help             show this help

Environment:
  DATABASE_URL           PostgreSQL connection string; the worker connects as the runtime role
                         porter_app on that server and database (required unless the next is set)
  PORTER_APP_DATABASE_URL  connection string of the runtime role, used as it is
  PORTER_APP_PASSWORD    password of porter_app when derived from DATABASE_URL
  PORTER_LISTEN_DATABASE_URL  the LISTEN and maintenance connections' connection string (see the flag)
  PORTER_DB_POOL_SIZE    most connections of the worker's pool (see --db-pool-size)
  PORTER_PREPARED_STATEMENTS  on|off: named prepared statements on the pool's connections (default on)
  PORTER_WORKER_VERSION  version recorded with the worker and in errors (default: package version)
  PORTER_DRAIN_GRACE_MS  drain grace period in ms
  PORTER_WORKER_METRICS_PORT  port of the metrics endpoint (the --metrics-port flag wins)
  PORTER_WEBHOOK_CA_FILE  PEM file of extra CAs the alert webhook (webhook.deliver) trusts besides
                         the system's (a private CA); TLS verification is never turned off
  LOG_LEVEL              fatal|error|warn|info|debug|trace|silent (default info)
`;

const fail = (message: string): never => {
  process.stderr.write(`${message}\n\n${USAGE}`);
  process.exit(2);
};

/** `parse()`'s result; a parse error is a usage error (exit 2). */
const orFail = <T>(parse: () => T): T => {
  try {
    return parse();
  } catch (error) {
    return fail((error as Error).message);
  }
};

/** A handler set that cannot run: one line naming the problem, no stack, exit code 2. */
const setupFailed = (error: unknown): never => {
  process.stderr.write(`porter-worker: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(2);
};

const positiveInt = (name: string, value: string | undefined, min = 1): number | undefined => {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < min) fail(`--${name} must be an integer ≥ ${min}, got "${value}"`);
  return n;
};

const main = async (): Promise<void> => {
  const { values } = orFail(() =>
    parseArgs({
      options: {
        pool: { type: "string" },
        concurrency: { type: "string" },
        "grace-ms": { type: "string" },
        "hang-grace-ms": { type: "string" },
        prefetch: { type: "string" },
        handlers: { type: "string" },
        "skip-other-pools": { type: "boolean" },
        "no-maintenance": { type: "boolean" },
        "db-pool-size": { type: "string" },
        "listen-database-url": { type: "string" },
        "no-prepared-statements": { type: "boolean" },
        "metrics-port": { type: "string" },
        "metrics-host": { type: "string" },
        help: { type: "boolean", short: "h" },
      },
      strict: true,
    }),
  );
  if (values.help) {
    process.stdout.write(USAGE);
    return;
  }
  if (!values.pool) return fail("--pool is required");
  const concurrency = positiveInt("concurrency", values.concurrency);
  const hangGraceMs = positiveInt("hang-grace-ms", values["hang-grace-ms"], 0);
  const prefetch = positiveInt("prefetch", values.prefetch, 0);
  const flagMetricsPort = positiveInt("metrics-port", values["metrics-port"], 0);
  if (flagMetricsPort !== undefined && flagMetricsPort > 65_535) fail(`--metrics-port must be ≤ 65535, got "${values["metrics-port"]}"`);

  const env = orFail(() => parseEnv());
  const graceMs = positiveInt("grace-ms", values["grace-ms"], 0) ?? env.PORTER_DRAIN_GRACE_MS;
  const poolSize = positiveInt("db-pool-size", values["db-pool-size"], MIN_POOL_SIZE) ?? env.PORTER_DB_POOL_SIZE;
  const listenConnectionString = values["listen-database-url"] ?? env.PORTER_LISTEN_DATABASE_URL;
  if (listenConnectionString !== undefined && !URL.canParse(listenConnectionString))
    fail(`--listen-database-url must be a connection URL, got "${listenConnectionString}"`);
  const preparedStatements = values["no-prepared-statements"] ? false : env.PORTER_PREPARED_STATEMENTS !== "off";
  if (!env.DATABASE_URL && !env.PORTER_APP_DATABASE_URL) {
    return fail("DATABASE_URL (or PORTER_APP_DATABASE_URL) is required (npm start runs workers against the embedded database)");
  }
  // The runtime role, never the owner: see README "Configuration".
  const connectionString = runtimeDatabaseUrl({
    databaseUrl: env.DATABASE_URL,
    appDatabaseUrl: env.PORTER_APP_DATABASE_URL,
    appPassword: env.PORTER_APP_PASSWORD,
  });

  const logger = createLogger({ level: env.LOG_LEVEL });
  const metricsPort = flagMetricsPort ?? env.PORTER_WORKER_METRICS_PORT;
  // The id is chosen here so the metrics carry it from the first scrape (the worker records the same one).
  const workerId = randomUUID();
  const metrics = metricsPort === undefined ? undefined : new WorkerMetrics({ pool: values.pool, workerId });
  const pkg = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string };
  const version = env.PORTER_WORKER_VERSION ?? pkg.version;
  let webhookCa: Buffer | undefined;
  if (env.PORTER_WEBHOOK_CA_FILE) {
    try {
      webhookCa = readFileSync(env.PORTER_WEBHOOK_CA_FILE);
    } catch (error) {
      return fail(`PORTER_WEBHOOK_CA_FILE: cannot read ${env.PORTER_WEBHOOK_CA_FILE}: ${(error as Error).message}`);
    }
  }
  let handlers: AnyHandler[] = [];
  if (values.handlers) {
    try {
      handlers = await loadHandlerModule(values.handlers);
    } catch (error) {
      return setupFailed(error);
    }
  }

  // One stop may arrive twice (the process group's copy and npm's relay): only a signal more than
  // REPEATED_SIGNAL_WINDOW_MS after the first forces the stop.
  const classify = createStopSignals();
  // Installed before the worker starts (its start waits for a restarting database): a stop that
  // arrives meanwhile is kept and carried out as soon as the worker is up, never lost to Node's
  // default handler (which would kill the process undrained).
  let worker: StartedWorker | undefined;
  let isStopPending = false;
  const drain = (running: StartedWorker) => {
    void running
      .drain()
      .then((report) => {
        logger.info("drained; exiting", { finishedInGrace: report.finishedInGrace, handedBack: report.handedBack.length });
        process.exit(0);
      })
      .catch((error: unknown) => {
        logger.fatal("drain failed", { err: error });
        process.exit(1);
      });
  };
  const onSignal = (signal: NodeJS.Signals) => {
    const action = classify();
    if (!worker) {
      if (action === "force") {
        logger.warn("second signal before the worker started: exiting", { signal });
        process.exit(1);
      }
      if (action === "drain") logger.info("signal received while starting: draining once started", { signal });
      isStopPending = true;
      return;
    }
    const running = worker;
    if (action === "repeat") {
      logger.info("signal repeated within a second: already draining", { signal });
      return;
    }
    if (action === "drain") {
      logger.info("signal received: draining", { signal });
      drain(running);
      return;
    }
    logger.warn("second signal: handing back unfinished work now", { signal });
    running.force();
    setTimeout(() => {
      logger.fatal("drain did not finish after a forced stop; exiting");
      process.exit(1);
    }, 10_000).unref();
  };
  process.on("SIGTERM", onSignal);
  process.on("SIGINT", onSignal);
  try {
    // Start first: it waits for a database that is still starting up (a restart), where a query of
    // our own before it would fail at once and end the process.
    worker = await startWorker({
      connectionString,
      pool: values.pool,
      handlers,
      otherPools: values["skip-other-pools"] ? "skip" : "error",
      concurrency,
      logger,
      version,
      graceMs,
      hangGraceMs,
      prefetch,
      maintenance: !values["no-maintenance"],
      poolSize,
      preparedStatements,
      ...(listenConnectionString ? { listenConnectionString } : {}),
      webhook: { ca: webhookCa },
      workerId,
      ...(metrics ? { probe: metrics.probe } : {}),
    });
  } catch (error) {
    if (error instanceof HandlerSetupError) return setupFailed(error);
    logger.fatal("worker could not start", { err: error, hint: runtimeLoginHint(error) });
    process.exit(1);
  }

  if (metrics && metricsPort !== undefined) {
    metrics.attach(worker);
    const host = values["metrics-host"] ?? "127.0.0.1";
    try {
      const server = await startMetricsServer(metrics, { host, port: metricsPort, logger });
      logger.info("metrics endpoint listening", { url: `http://${host.includes(":") ? `[${host}]` : host}:${server.port}/metrics` });
    } catch (error) {
      logger.error("metrics endpoint could not listen; the worker runs without it", { err: error, host, port: metricsPort });
    }
  }

  if (isStopPending) {
    logger.info("worker started after a stop signal: draining");
    drain(worker);
  }
};

process.on("unhandledRejection", (reason) => {
  // Through the log serializer: a database error's stack quotes its message (safe-error.ts).
  const safe = serializeError(reason);
  process.stderr.write(`unhandled rejection: ${isSafeError(safe) ? (safe.stack ?? safe.message) : String(reason)}\n`);
  process.exit(1);
});

void main();
