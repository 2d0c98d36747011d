// One chaos run, start to finish: its own PostgreSQL cluster (migrated, demo configuration
// seeded), a fleet of real worker processes, producers enqueueing all along, and on a schedule:
// SIGKILLs of workers (each replaced at once), terminated LISTEN connections, and one immediate
// PostgreSQL restart that transactional producers are committing through. Then it lets the fleet
// settle and checks the invariants (invariants.ts).
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { updateConfig } from "@porter/core";
import { createPool } from "@porter/db/pool";
import { createPrisma } from "@porter/db/prisma";
import { startRestartableCluster } from "@porter/db/testing/restartable-cluster";
import { seedDemo } from "../seed/demo";
import { type FleetMember, type ListenKill, WorkerFleet } from "./fleet";
import { type Check, checkInvariants, QUIET_AFTER_RESTART_MS } from "./invariants";
import { type JobKind, MixProducer, ORDERS_TABLE_SQL, TransactionalProducer } from "./producers";
import { formatReport } from "./report";

export type ChaosOptions = {
  /** Length of the chaos phase (producing, killing); settling comes after. */
  durationMs: number;
  /** A worker is SIGKILLed (and replaced) this often. */
  killEveryMs: number;
  /** When, within the chaos phase, PostgreSQL is restarted (`pg_ctl restart -m immediate`). */
  restartsAtMs: number[];
  /** When, within the chaos phase, a worker's LISTEN connection is terminated. */
  listenKillsAtMs: number[];
  jobsPerSecond: number;
  workers: number;
  /** `--concurrency` of each worker. */
  concurrency: number;
  /** Transactional producers committing through the restart. */
  transactionalProducers: number;
  /** How long the fleet may take to finish every job after the chaos phase. */
  settleTimeoutMs: number;
  /** Lease and backoff of the `diag` queue for the run (set through the control plane). */
  leaseSeconds: number;
  backoffBaseMs: number;
  backoffCapMs: number;
  /** Seed of the job mix and of the victims' choice. */
  seed: number;
  /** Where each worker's output is written after the run (kept for evidence). Default: not written. */
  logDir?: string;
  onProgress?: (message: string) => void;
};

/** What the run did, for the report. */
export type ChaosActions = {
  seed: number;
  workers: number;
  concurrency: number;
  chaosMs: number;
  settleMs: number;
  totalMs: number;
  kills: Array<{ at: number; member: FleetMember }>;
  /** The mid-run restarts. */
  restarts: Restart[];
  /** The transactional-enqueue crash case, before the fleet starts. */
  crashCase: Restart & { commits: number };
  listenKills: ListenKill[];
  acknowledgedByKind: Record<JobKind, number>;
  failedEnqueueCalls: number;
  transactionalCommits: number;
  failedTransactions: number;
  workersStarted: number;
  jobsTotal: number;
};

/** One immediate restart: when it was issued, how long until the server accepted connections again. */
export type Restart = { at: number; ms: number; commitsInLastSecond: number };

export type ChaosReport = { isOk: boolean; checks: Check[]; actions: ChaosActions; table: string };

/** Mulberry32: a small seeded generator, so a failing run's mix and victims can be replayed. */
export const seededRandom = (seed: number): (() => number) => {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
};

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));

/** Runs one chaos run and returns its checks, what it did and the printed table. */
export const runChaos = async (options: ChaosOptions): Promise<ChaosReport> => {
  const progress = options.onProgress ?? (() => {});
  const random = seededRandom(options.seed);
  const runId = options.seed.toString(36);
  const began = Date.now();
  const cluster = await startRestartableCluster({ isMigrated: true, settings: { max_connections: "300" } });
  progress(`cluster up on port ${cluster.port} (${Date.now() - began} ms)`);
  const db = createPool(cluster.connectionString, { max: 24, applicationName: "porter-chaos", connectionTimeoutMillis: 5_000 });
  // The producers stand for a Porter-using application (the console's enqueue path): a connection
  // error that only this listener hears (no listener of Porter's own, not the pool's idle one)
  // would have crashed that process with an unhandled 'error' event. Heard here, kept as evidence.
  const unhandledClientErrors: string[] = [];
  db.on("connect", (client) =>
    client.on("error", (error) => {
      if (client.listenerCount("error") <= 1) unhandledClientErrors.push(`${new Date().toISOString()} ${error.message}`);
    }),
  );
  const fleet = new WorkerFleet({ connectionString: cluster.connectionString, pool: "background", size: options.workers, concurrency: options.concurrency });
  try {
    const prisma = createPrisma(db);
    await seedDemo(prisma, { actor: "chaos", adminEmail: "admin@porter.local", adminPassword: "chaos-suite-admin" });
    await updateConfig(
      prisma,
      "queue",
      "diag",
      { lease_seconds: options.leaseSeconds, backoff_base_ms: options.backoffBaseMs, backoff_cap_ms: options.backoffCapMs },
      { actor: "chaos", reason: "chaos run: short lease and backoff so crashed attempts come back within the run" },
    );
    await prisma.$disconnect();
    await db.query(ORDERS_TABLE_SQL);
    const transactional = new TransactionalProducer(db, { runId, concurrency: options.transactionalProducers });
    const crashCase = await transactionalCrashCase(cluster, transactional);
    progress(
      `transactional-enqueue crash case: ${crashCase.commits} commits, ${crashCase.commitsInLastSecond} in the last second, server back after ${crashCase.ms} ms`,
    );
    await fleet.start();
    progress(`${options.workers} workers started (${Date.now() - began} ms)`);

    const mix = new MixProducer(db, { runId, jobsPerSecond: options.jobsPerSecond, random });
    const kills: ChaosActions["kills"] = [];
    const listenKills: ListenKill[] = [];
    const restarts: Restart[] = [];
    let quietUntil = 0;

    const t0 = Date.now();
    mix.start();
    const killLoop = (async () => {
      // A kill waits until the fleet is full again (the replacement of the last one is ready) and
      // until the quiet time after a restart has passed; later kills keep their spacing.
      for (let next = options.killEveryMs; next < options.durationMs; next += options.killEveryMs) {
        await sleep(t0 + next - Date.now());
        while (Date.now() < quietUntil || !(await fleet.waitUntilFull(250))) {
          if (Date.now() - t0 >= options.durationMs) return;
          await sleep(100);
        }
        if (Date.now() - t0 >= options.durationMs) return;
        const victim = await fleet.killOne(random);
        if (victim) {
          kills.push({ at: Date.now(), member: victim });
          progress(`SIGKILL w${victim.index} at +${Date.now() - t0} ms`);
        }
        next = Math.max(next, Date.now() - t0);
      }
    })();
    const listenLoop = (async () => {
      for (const at of options.listenKillsAtMs) {
        await sleep(t0 + at - Date.now());
        // Retried for a while: the server may be restarting, or the listeners reconnecting.
        for (let tries = 0; tries < 50; tries++) {
          const kill = await fleet.killListenConnection(db, "porter", random).catch(() => undefined);
          if (kill?.member) {
            listenKills.push(kill);
            progress(`terminated the LISTEN connection of w${kill.member.index} (of ${kill.candidates} live listeners) at +${Date.now() - t0} ms`);
            break;
          }
          await sleep(200);
        }
      }
    })();
    const restartLoop = (async () => {
      for (const offset of options.restartsAtMs) {
        // The transactional producers commit as fast as they can into the restart.
        await sleep(t0 + offset - 1_500 - Date.now());
        transactional.start();
        await sleep(t0 + offset - Date.now());
        quietUntil = Number.POSITIVE_INFINITY;
        const at = Date.now();
        const commitsInLastSecond = transactional.committedAt.filter((c) => c > at - 1_000).length;
        await cluster.restartImmediate();
        const ms = Date.now() - at;
        quietUntil = Date.now() + QUIET_AFTER_RESTART_MS;
        restarts.push({ at, ms, commitsInLastSecond });
        progress(`PostgreSQL restarted (immediate) at +${at - t0} ms, back after ${ms} ms`);
        await sleep(1_000);
        await transactional.stop();
      }
    })();
    await Promise.all([killLoop, listenLoop, restartLoop, sleep(options.durationMs)]);
    await mix.stop();
    const chaosMs = Date.now() - t0;
    progress(`chaos phase over after ${chaosMs} ms; ${mix.acknowledged.size} jobs acknowledged; settling`);

    const settleStart = Date.now();
    for (;;) {
      const open = await db
        .query<{ n: number }>(`SELECT count(*)::int AS n FROM jobs`)
        .then((r) => r.rows[0]!.n)
        .catch(() => Number.NaN);
      if (open === 0 || Date.now() - settleStart > options.settleTimeoutMs) break;
      await sleep(250);
    }
    const settleMs = Date.now() - settleStart;
    progress(`settled in ${settleMs} ms; draining the fleet`);
    await fleet.stop();

    const checks = await checkInvariants({
      db,
      fleet,
      acknowledged: mix.acknowledged,
      committedOrders: transactional.committed,
      restarts,
      listenKills,
      unhandledClientErrors,
    });
    const { rows } = await db.query<{ n: number }>(`SELECT (SELECT count(*) FROM jobs) + (SELECT count(*) FROM finished_jobs) AS n`);
    const acknowledgedByKind: Record<JobKind, number> = { effect: 0, sleep: 0, transient: 0, permanent: 0 };
    for (const kind of mix.acknowledged.values()) acknowledgedByKind[kind] += 1;
    const actions: ChaosActions = {
      seed: options.seed,
      workers: options.workers,
      concurrency: options.concurrency,
      chaosMs,
      settleMs,
      totalMs: Date.now() - began,
      kills,
      restarts,
      crashCase,
      listenKills,
      acknowledgedByKind,
      failedEnqueueCalls: mix.failedCalls,
      transactionalCommits: transactional.committed.size,
      failedTransactions: transactional.failedTransactions,
      workersStarted: fleet.members.length,
      jobsTotal: Number(rows[0]!.n),
    };
    const isOk = checks.every((c) => c.isOk);
    if (!isOk && options.logDir) {
      await mkdir(options.logDir, { recursive: true });
      await cluster.dump(join(options.logDir, "porter.dump")).catch((error: unknown) => progress(`pg_dump failed: ${String(error)}`));
    }
    return { isOk, checks, actions, table: formatReport(checks, actions) };
  } finally {
    await fleet.killAll();
    if (options.logDir) await writeLogs(options.logDir, fleet, cluster.tailLog(400)).catch(() => undefined);
    await db.end().catch(() => undefined);
    await cluster.stop();
  }
};

/**
 * The transactional-enqueue crash case, on a quiet server (no fleet yet): the transactional
 * producers commit for 1.5 s, and the server is restarted immediately while they do. With nothing
 * else committing, a COMMIT that was acknowledged but not flushed to WAL (an asynchronous commit)
 * is certain to be lost — other traffic's synchronous commits would flush it along with theirs,
 * which is why the mid-run restart alone can miss it. Every acknowledged order is checked at the
 * end (its row, its job, and that the job ran).
 */
const transactionalCrashCase = async (
  cluster: { restartImmediate: () => Promise<void> },
  transactional: TransactionalProducer,
): Promise<Restart & { commits: number }> => {
  const before = transactional.committed.size;
  transactional.start();
  await sleep(1_500);
  const at = Date.now();
  const commitsInLastSecond = transactional.committedAt.filter((c) => c > at - 1_000).length;
  await cluster.restartImmediate();
  const ms = Date.now() - at;
  await transactional.stop();
  return { at, ms, commitsInLastSecond, commits: transactional.committed.size - before };
};

const writeLogs = async (dir: string, fleet: WorkerFleet, serverLog: string): Promise<void> => {
  await mkdir(dir, { recursive: true });
  await Promise.all(fleet.members.map((m) => writeFile(join(dir, `w${m.index}.log`), m.process.output())));
  await writeFile(join(dir, "postgresql.log"), serverLog);
};
