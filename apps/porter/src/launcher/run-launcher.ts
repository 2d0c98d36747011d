import { createWriteStream, existsSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import { join, relative, resolve } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { pathToFileURL } from "node:url";
import { isPortFree } from "@porter/db/embedded-process";
import { describeProgress, migrate } from "@porter/db/migrator";
import { createPool } from "@porter/db/pool";
import { createPrisma } from "@porter/db/prisma";
import { appRoleFor, resolveAppPassword } from "../cli/app-role";
import { seedSummaryLines } from "../cli/commands/seed";
import { type CliEnv, parseCliEnv } from "../cli/env";
import { embeddedDataDir, porterHome, repoRoot } from "../cli/paths";
import { type SeedDemoResult, seedDemo } from "../seed/demo";
import { watchAncestors } from "./ancestors";
import { ensureAuthSecret } from "./auth-secret";
import { bundleConsoleServer, bundleWorker } from "./bundles";
import { consoleStartArgs, localHostOf } from "./console-args";
import { consoleBuildReason } from "./console-build";
import { CREDENTIALS_FILE_NAME, presentCredentials } from "./credentials";
import { EMBEDDED_READY, type EmbeddedReady } from "./embedded-protocol";
import { checkHandlersModule } from "./handlers-module";
import { makePrefixer, renderLogLine } from "./prefix";
import { type ChildExit, type ManagedChild, Supervisor } from "./supervisor";
import { workerMetricsPorts, workerStartArgs } from "./worker-args";

/** How long children get to stop on Ctrl-C (workers drain: 10 s grace by default) before SIGKILL. */
const CHILD_STOP_TIMEOUT_MS = 30_000;
const POSTGRES_STOP_TIMEOUT_MS = 20_000;
const HEALTH_TIMEOUT_MS = 120_000;
/** A repeated signal within this window is the same Ctrl-C relayed by npm/tsx, not a second one. */
const SIGNAL_DEBOUNCE_MS = 2_000;

/** Raised inside the start-up sequence once a stop was requested, to abandon it quietly. */
class StopRequested extends Error {}

/**
 * `npm start`: the whole system on one machine from a fresh clone. Starts (or uses) the database,
 * migrates, seeds an empty control plane, builds the console when needed, runs the console and
 * one worker per pool under a supervisor, waits for /api/health, and prints the URL and logins.
 * Ctrl-C or SIGTERM stops everything in order: workers drain and the console stops (SIGTERM,
 * SIGKILL after 30 s), then the embedded database; a second Ctrl-C kills at once.
 *
 * Child failures: workers and the console (once it has answered /api/health) are restarted with
 * exponential backoff (1 s … 30 s) and each exit is logged; a console that dies before it ever
 * answered, or a failed build, migration or seed, stops everything with exit code 1.
 */
export const runLauncher = async (): Promise<number> => {
  const root = repoRoot();
  const home = porterHome(root);
  const prefix = makePrefixer(Boolean(process.stdout.isTTY));
  const say = (message: string) => process.stdout.write(`${prefix("porter")}${message}\n`);
  const warn = (message: string) => process.stderr.write(`${prefix("porter")}${message}\n`);

  let env: CliEnv;
  try {
    env = parseCliEnv();
  } catch (error) {
    warn((error as Error).message);
    return 2;
  }

  let postgresLog: NodeJS.WritableStream | undefined;
  const supervisor = new Supervisor({
    output: (name, line, stream) => {
      if (line.startsWith(EMBEDDED_READY)) return; // carries the password: never printed or logged
      if (name === "postgres") {
        postgresLog?.write(`${line}\n`);
        // The server's routine LOG lines go to .porter/postgres.log only, and so do its ERROR lines:
        // a refused statement's error quotes the value it failed on (a payload), and the client
        // that ran it logs the error itself, without that value (@porter/db/logger).
        if (!/^embedded PostgreSQL|FATAL|PANIC|WARNING/.test(line) || /terminating connection due to administrator command/.test(line)) return;
      }
      (stream === "stderr" ? process.stderr : process.stdout).write(`${prefix(name)}${renderLogLine(line)}\n`);
    },
    log: (message) => say(message),
    onExit: (child, exit) => onChildExit(child, exit),
  });

  // ---- stopping -------------------------------------------------------------------------------
  let stopping: Promise<number> | undefined;
  let firstSignalAt = 0;
  const stop = (reason: string, exitCode: number): Promise<number> =>
    (stopping ??= (async () => {
      const hasChildren = supervisor.running.some((c) => c.spec.name !== "postgres");
      say(`stopping (${reason})${hasChildren ? ": workers drain, then the console and the database stop…" : "…"}`);
      await supervisor.stop({ timeoutMs: CHILD_STOP_TIMEOUT_MS, only: (c) => c.spec.name !== "postgres" });
      await supervisor.stop({ timeoutMs: POSTGRES_STOP_TIMEOUT_MS, only: (c) => c.spec.name === "postgres" });
      postgresLog?.end();
      say("stopped");
      return exitCode;
    })());
  const onSignal = (signal: NodeJS.Signals) => {
    const now = Date.now();
    if (!stopping) {
      firstSignalAt = now;
      void stop(signal, 0);
      say("(Ctrl-C again to kill the console and workers at once)");
    } else if (now - firstSignalAt > SIGNAL_DEBOUNCE_MS) {
      say("second signal: killing the console and workers now");
      supervisor.signalAll("SIGKILL", (c) => c.spec.name !== "postgres");
    }
  };
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.on(signal, onSignal);
  // Crash paths: never leave children behind. (A SIGKILL of this process is covered by the
  // children themselves: their stdin pipe closes, see parent-guard.mjs and embedded-holder.ts.)
  process.on("exit", () => supervisor.signalAll("SIGTERM"));
  const onCrash = (error: unknown) => {
    warn(`launcher error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    void stop("launcher error", 1).then((code) => process.exit(code));
  };
  process.on("uncaughtException", onCrash);
  process.on("unhandledRejection", onCrash);
  watchAncestors((pid) => void stop(`the process that started it, pid ${pid}, is gone`, 0));

  let isConsoleHealthy = false;
  let consoleDied: ((exit: ChildExit) => void) | undefined;
  const onChildExit = (child: ManagedChild, exit: ChildExit) => {
    if (child.spec.name === "console" && !isConsoleHealthy) consoleDied?.(exit);
  };
  const checkpoint = () => {
    if (stopping) throw new StopRequested();
  };

  // ---- starting -------------------------------------------------------------------------------
  try {
    const databaseUrl = env.DATABASE_URL ?? (await startEmbedded(root, supervisor, say, (stream) => (postgresLog = stream)));
    checkpoint();
    const where = env.DATABASE_URL
      ? `DATABASE_URL (${redact(databaseUrl)})`
      : `embedded PostgreSQL in ${relative(process.cwd(), embeddedDataDir(root)) || embeddedDataDir(root)}`;
    say(`database: ${where}`);

    // Migrations run as the owner; the seed, console and workers as the runtime role, whose
    // password (unless configured) is generated into .porter/app-password and set by the migrator.
    const appRole = appRoleFor(env, databaseUrl, await resolveAppPassword(env, { home, generate: true }));
    say("migrating…");
    const migrated = await migrate(databaseUrl, {
      runtimeRole: appRole.spec,
      onProgress: (p) => say(describeProgress(p)),
    });
    say(`migrations: ${migrated.applied.length} applied, ${migrated.skipped} already applied; console and workers connect as ${migrated.runtimeRole?.name}`);
    checkpoint();

    // PORTER_HANDLERS: the user's handler module, given to every worker (each runs its pool's share).
    const handlersModule = process.env.PORTER_HANDLERS ? resolve(process.cwd(), process.env.PORTER_HANDLERS) : undefined;
    const db = createPool(appRole.connectionString, { max: 2, applicationName: "porter-start" });
    let seed: SeedDemoResult;
    let pools: string[];
    let hasAdmin: boolean;
    const prisma = createPrisma(db);
    try {
      seed = await seedDemo(prisma, {
        actor: "seed",
        adminEmail: env.PORTER_ADMIN_EMAIL,
        ...(env.PORTER_ADMIN_PASSWORD ? { adminPassword: env.PORTER_ADMIN_PASSWORD } : {}),
      });
      say(seed.created ? "seeded the demo configuration" : "control plane already configured: not seeding");
      pools = (await prisma.pool.findMany({ select: { id: true }, orderBy: { id: "asc" } })).map((r) => r.id);
      hasAdmin = (await prisma.user.findFirst({ where: { email: env.PORTER_ADMIN_EMAIL.toLowerCase(), disabledAt: null }, select: { id: true } })) !== null;
      if (handlersModule) say(`handlers: ${(await checkHandlersModule(db, handlersModule, pools)).join(", ")} (PORTER_HANDLERS)`);
    } finally {
      await prisma.$disconnect();
      await db.end();
    }
    checkpoint();

    const auth = await ensureAuthSecret(env.AUTH_SECRET, join(home, "auth-secret"));
    if (auth.source === "generated") say(`generated AUTH_SECRET into ${relative(process.cwd(), join(home, "auth-secret"))}`);
    const consoleUrl = `http://${env.HOST === "127.0.0.1" ? "localhost" : localHostOf(env.HOST)}:${env.PORT}`;
    const childEnv: NodeJS.ProcessEnv = {
      ...process.env,
      // The owner's credentials stay here: children get the runtime role's URL only.
      DATABASE_URL: appRole.connectionString,
      PORTER_APP_DATABASE_URL: appRole.connectionString,
      AUTH_SECRET: auth.secret,
      NEXTAUTH_SECRET: process.env.NEXTAUTH_SECRET ?? auth.secret,
      NEXTAUTH_URL: process.env.NEXTAUTH_URL ?? consoleUrl,
      PORT: String(env.PORT),
      HOST: env.HOST,
      NEXT_TELEMETRY_DISABLED: "1",
    };

    const buildReason = await consoleBuildReason(root);
    if (buildReason) {
      say(`building the console (${buildReason}); this takes about a minute…`);
      const build = supervisor.start({
        name: "build",
        ...npmCommand(["run", "build", "-w", "@porter/console"]),
        cwd: root,
        env: childEnv,
        restart: false,
      });
      const exit = await build.exited();
      checkpoint();
      if (exit?.code !== 0) throw new Error(`the console build failed (${exit?.signal ?? `exit code ${exit?.code}`}); see the [build] lines above`);
      say("console built");
    } else {
      say("console build is up to date");
    }
    // The console's server and the workers run as JavaScript bundles, built at every start (bundles.ts).
    const bundledAt = performance.now();
    const consoleServer = await bundleConsoleServer(root);
    checkpoint();
    say(`console server bundled (${Math.round(performance.now() - bundledAt)} ms)`);

    if (!(await isPortFree(env.PORT))) throw new Error(`port ${env.PORT} is in use: stop what runs there, or set PORT`);
    const guard = pathToFileURL(join(root, "apps/porter/src/launcher/parent-guard.mjs")).href;
    const guardedEnv = { ...childEnv, PORTER_PARENT_GUARD: "1" };
    const consoleExit = new Promise<ChildExit>((resolve) => (consoleDied = resolve));
    supervisor.start({
      name: "console",
      command: process.execPath,
      args: consoleStartArgs({ server: consoleServer, guard }),
      cwd: join(root, "apps/console"),
      env: guardedEnv,
      restart: false,
    });

    const workerScript = join(root, "apps/worker/src/bin/worker.ts");
    const metricsPorts = workerMetricsPorts(env.PORTER_WORKER_METRICS_PORT, pools);
    if (!existsSync(workerScript)) warn(`${relative(root, workerScript)} is missing: no worker started`);
    else if (pools.length === 0) warn("no pools are configured: no worker started");
    else {
      // A port in use (another stack on this machine): that worker runs without its endpoint.
      for (const [poolId, port] of metricsPorts) {
        if (!(await isPortFree(port))) {
          warn(`port ${port} is in use: worker:${poolId} starts without its metrics endpoint (set PORTER_WORKER_METRICS_PORT to another first port, or off)`);
          metricsPorts.delete(poolId);
        }
      }
      // The worker reads PORTER_WORKER_METRICS_PORT itself (a number only, one port): the flag says
      // it here, so the variable is left out (spawn skips undefined values).
      const workerEnv = { ...guardedEnv, PORTER_WORKER_METRICS_PORT: undefined };
      const workerBundledAt = performance.now();
      const workerBundle = await bundleWorker(root);
      checkpoint();
      say(`worker bundled (${Math.round(performance.now() - workerBundledAt)} ms)`);
      for (const poolId of pools) {
        supervisor.start({
          name: `worker:${poolId}`,
          command: process.execPath,
          args: workerStartArgs({
            preload: ["--import", "tsx", "--import", guard],
            workerScript: workerBundle,
            poolId,
            handlersModule,
            metricsPort: metricsPorts.get(poolId),
          }),
          cwd: root,
          env: workerEnv,
          restart: true,
        });
      }
    }

    const healthUrl = `http://${localHostOf(env.HOST)}:${env.PORT}/api/health`;
    const health = await Promise.race([waitForHealth(healthUrl, HEALTH_TIMEOUT_MS, () => Boolean(stopping)), consoleExit]);
    checkpoint();
    if (typeof health === "object") {
      throw new Error(`the console exited before it answered ${healthUrl} (${health.signal ?? `exit code ${health.code}`}); see the [console] lines above`);
    }
    if (!health) throw new Error(`the console did not answer ${healthUrl} with 200 within ${HEALTH_TIMEOUT_MS / 1000} s`);
    isConsoleHealthy = true;
    // From now on a console crash is restarted like a worker's.
    const consoleChild = supervisor.running.find((c) => c.spec.name === "console");
    if (consoleChild) consoleChild.spec.restart = true;

    // One-time credentials (a generated admin password, a new producer key) reach a terminal
    // only; redirected output gets the path of a 0600 file instead (credentials.ts).
    const isPasswordGenerated = seed.adminCreated && Boolean(seed.adminPassword);
    const credentials = await presentCredentials({
      lines: [
        ...(isPasswordGenerated ? seedSummaryLines({ ...seed, producerKey: undefined }) : []),
        ...seedSummaryLines({ adminEmail: seed.adminEmail, adminCreated: false, ...(seed.producerKey ? { producerKey: seed.producerKey } : {}) }),
      ],
      isTty: Boolean(process.stdout.isTTY),
      path: join(home, CREDENTIALS_FILE_NAME),
    });
    const banner = [
      "",
      "Porter is running.",
      `  console:      ${consoleUrl}`,
      ...(isPasswordGenerated
        ? []
        : seed.adminCreated
          ? seedSummaryLines({ ...seed, producerKey: undefined })
          : hasAdmin
            ? [
                `  admin login:  ${env.PORTER_ADMIN_EMAIL}${env.PORTER_ADMIN_PASSWORD ? " / the password in PORTER_ADMIN_PASSWORD" : " (password shown at the first start)"}`,
              ]
            : []),
      ...credentials,
      `  workers:      ${pools.length ? pools.map((p) => `worker:${p}`).join(", ") : "none"}`,
      ...(metricsPorts.size && pools.length
        ? [
            `  metrics:      ${[...metricsPorts].map(([p, port]) => `worker:${p} http://127.0.0.1:${port}/metrics`).join(", ")} (PORTER_WORKER_METRICS_PORT; off disables)`,
          ]
        : []),
      `  try:          npm run porter -- enqueue --type diag.sleep --tenant tenant_A --payload '{"ms":10}'`,
      "  stop:         Ctrl-C",
      "",
    ];
    process.stdout.write(`${banner.join("\n")}\n`);
  } catch (error) {
    // A stop requested mid-way (Ctrl-C during the build, say) also lands here: no error then.
    if (stopping || error instanceof StopRequested) return stopping ?? stop("stop requested", 0);
    warn(`could not start: ${error instanceof Error ? error.message : String(error)}`);
    return stop("start-up failed", 1);
  }
  return (
    stopping
    ?? new Promise<number>((resolve) => {
      // Keeps running until a signal (or a crash) starts the stop, then reports its exit code.
      const timer = setInterval(() => {
        if (stopping) {
          clearInterval(timer);
          void stopping.then(resolve);
        }
      }, 200);
    })
  );
};

/**
 * Starts the embedded PostgreSQL holder (its own process group, see embedded-holder.ts) and
 * waits for its handshake; returns the connection string.
 */
const startEmbedded = async (
  root: string,
  supervisor: Supervisor,
  say: (message: string) => void,
  setLog: (stream: NodeJS.WritableStream) => void,
): Promise<string> => {
  const dataDir = embeddedDataDir(root);
  const logPath = join(porterHome(root), "postgres.log");
  say(
    `DATABASE_URL is not set: starting the embedded PostgreSQL (${relative(process.cwd(), dataDir) || dataDir}, log in ${relative(process.cwd(), logPath)})…`,
  );
  await mkdir(porterHome(root), { recursive: true });
  setLog(createWriteStream(logPath, { flags: "a", mode: 0o600 }));
  let onReady!: (ready: EmbeddedReady) => void;
  const ready = new Promise<EmbeddedReady>((resolve) => (onReady = resolve));
  const holder = supervisor.start({
    name: "postgres",
    command: process.execPath,
    args: ["--import", "tsx", join(root, "apps/porter/src/launcher/embedded-holder.ts"), dataDir],
    cwd: root,
    env: process.env,
    restart: false,
  });
  holder.onLine = (line, stream) => {
    if (stream === "stdout" && line.startsWith(EMBEDDED_READY)) onReady(JSON.parse(line.slice(EMBEDDED_READY.length)) as EmbeddedReady);
  };
  // Race the handshake against an early exit (resolved, never rejected: the loser must not
  // surface later as an unhandled rejection).
  const result = await Promise.race([ready, holder.exited().then((exit) => ({ exit }))]);
  if ("exit" in result) {
    const exit = result.exit;
    throw new Error(
      `the embedded PostgreSQL did not start (${exit?.signal ?? `exit code ${exit?.code}`}); see the [postgres] lines above and .porter/postgres.log`,
    );
  }
  if (!result.isOwner) {
    throw new Error(
      `the embedded PostgreSQL in ${dataDir} is already run by another process (another npm start, or a porter command in progress); stop it first`,
    );
  }
  say(`embedded PostgreSQL ready on port ${result.port}`);
  return result.connectionString;
};

/** Polls the health URL until it answers 200; false on timeout (or when a stop began). */
const waitForHealth = async (url: string, timeoutMs: number, isStopping: () => boolean): Promise<boolean> => {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline && !isStopping()) {
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(3_000) });
      if (response.status === 200) return true;
    } catch {
      // Not listening yet.
    }
    await sleep(500);
  }
  return false;
};

/** `npm <args>` as the npm running us would run it (npm_execpath under `npm start`). */
const npmCommand = (args: string[]): { command: string; args: string[] } => {
  const npmCli = process.env.npm_execpath;
  return npmCli?.endsWith(".js") ? { command: process.execPath, args: [npmCli, ...args] } : { command: "npm", args };
};

/** A connection string without its password, for printing. */
const redact = (url: string): string => {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = "***";
    return parsed.toString();
  } catch {
    return "(unparseable)";
  }
};
