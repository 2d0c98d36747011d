// One chaos run, start to finish: its own PostgreSQL cluster (migrated, demo configuration
// seeded), a fleet of real worker processes, producers enqueueing all along, and on a schedule:
// SIGKILLs of workers (each replaced at once), terminated LISTEN connections, and one immediate
// PostgreSQL restart that transactional producers are committing through. Then it lets the fleet
// settle and checks the invariants (invariants.ts).
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { updateConfig } from "@porter/core";
import { createPool } from "@porter/db/pool";
import { startRestartableCluster } from "@porter/db/testing/restartable-cluster";
import { seedDemo } from "../../../../prisma/seed";
import { WorkerFleet, type FleetMember, type ListenKill } from "./fleet";
import { checkInvariants, type Check } from "./invariants";
import { MixProducer, ORDERS_TABLE_SQL, TransactionalProducer, type JobKind } from "./producers";
import { formatReport } from "./report";

export type ChaosOptions = {
  /** Length of the chaos phase (producing, killing); settling comes after. */
  durationMs: number;
  /** A worker is SIGKILLed (and replaced) this often. */
  killEveryMs: number;
  /** When, within the chaos phase, PostgreSQL is restarted (`pg_ctl restart -m immediate`). */
  restartAtMs: number;
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
  restartMs: number;
  listenKills: ListenKill[];
  acknowledgedByKind: Record<JobKind, number>;
  failedEnqueueCalls: number;
  transactionalCommits: number;
  transactionalCommitsLastSecond: number;
  failedTransactions: number;
  workersStarted: number;
  jobsTotal: number;
};

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
  const fleet = new WorkerFleet({ connectionString: cluster.connectionString, pool: "background", size: options.workers, concurrency: options.concurrency });
  try {
    await seedDemo(db, { actor: "chaos", adminEmail: "admin@porter.local", adminPassword: "chaos-suite-admin" });
    await updateConfig(
      db,
      "queue",
      "diag",
      { lease_seconds: options.leaseSeconds, backoff_base_ms: options.backoffBaseMs, backoff_cap_ms: options.backoffCapMs },
      { actor: "chaos", reason: "chaos run: short lease and backoff so crashed attempts come back within the run" },
    );
    await db.query(ORDERS_TABLE_SQL);
    await fleet.start();
    progress(`${options.workers} workers started (${Date.now() - began} ms)`);

    const mix = new MixProducer(db, { runId, jobsPerSecond: options.jobsPerSecond, random });
    const transactional = new TransactionalProducer(db, { runId, concurrency: options.transactionalProducers });
    const kills: ChaosActions["kills"] = [];
    const listenKills: ListenKill[] = [];
    let restartAt = Number.POSITIVE_INFINITY;
    let restartMs = 0;
    let lastSecondCommits = 0;

    const t0 = Date.now();
    mix.start();
    const killLoop = (async () => {
      for (let next = options.killEveryMs; next < options.durationMs; next += options.killEveryMs) {
        await sleep(t0 + next - Date.now());
        const victim = await fleet.killOne(random);
        if (victim) {
          kills.push({ at: Date.now(), member: victim });
          progress(`SIGKILL w${victim.index} at +${Date.now() - t0} ms`);
        }
      }
    })();
    const listenLoop = (async () => {
      for (const at of options.listenKillsAtMs) {
        await sleep(t0 + at - Date.now());
        const kill = await fleet.killListenConnection(db, "porter", random).catch(() => undefined);
        if (kill) {
          listenKills.push(kill);
          progress(`terminated the LISTEN connection of w${kill.member?.index ?? "?"} at +${Date.now() - t0} ms`);
        }
      }
    })();
    const restartLoop = (async () => {
      // The transactional producers commit as fast as they can into the restart.
      await sleep(t0 + options.restartAtMs - 1_500 - Date.now());
      transactional.start();
      await sleep(t0 + options.restartAtMs - Date.now());
      restartAt = Date.now();
      lastSecondCommits = transactional.committedAt.filter((at) => at > restartAt - 1_000).length;
      await cluster.restartImmediate();
      restartMs = Date.now() - restartAt;
      progress(`PostgreSQL restarted (immediate) at +${restartAt - t0} ms, back after ${restartMs} ms`);
      await sleep(1_000);
      await transactional.stop();
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
      restartAt,
      listenKills,
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
      restartMs,
      listenKills,
      acknowledgedByKind,
      failedEnqueueCalls: mix.failedCalls,
      transactionalCommits: transactional.committed.size,
      transactionalCommitsLastSecond: lastSecondCommits,
      failedTransactions: transactional.failedTransactions,
      workersStarted: fleet.members.length,
      jobsTotal: Number(rows[0]!.n),
    };
    const isOk = checks.every((c) => c.isOk);
    return { isOk, checks, actions, table: formatReport(checks, actions) };
  } finally {
    await fleet.killAll();
    if (options.logDir) await writeLogs(options.logDir, fleet, cluster.tailLog(400)).catch(() => undefined);
    await db.end().catch(() => undefined);
    await cluster.stop();
  }
};

const writeLogs = async (dir: string, fleet: WorkerFleet, serverLog: string): Promise<void> => {
  await mkdir(dir, { recursive: true });
  await Promise.all(fleet.members.map((m) => writeFile(join(dir, `w${m.index}.log`), m.process.output())));
  await writeFile(join(dir, "postgresql.log"), serverLog);
};
