// `npm run scale` (issue 16): Porter's fleet on separate hosts — network namespaces on a bridge of
// the harness's own, PostgreSQL reached over it — at 1, 2, 4 and 8 hosts and once through PgBouncer
// in transaction mode; then a partition and a database restart under load. Needs root; bounded in
// time; removes everything it created, also on Ctrl-C or a failure, and a killed run's leftovers at
// the next start. bench/README.md "npm run scale".
import { writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { parseArgs } from "node:util";
import { fmt, markdownTable } from "../table";
import { runStep, type StepResult } from "./burn";
import { cleanStaleRun, ensurePgBouncer, type PgBouncer, type ScaleDatabase, startDatabase, startPgBouncer } from "./database";
import { type Check, runPartition, runRestart } from "./faults";
import { type Connection, startFleet, stopFleet, type WorkerProc } from "./fleet";
import { canBuildNetwork, createBridge, createHost, type Host, removeNetwork } from "./netns";

const USAGE = `Usage: npm run scale [-- options]   (as root)

Builds test hosts in network namespaces on a bridge of its own, starts a PostgreSQL cluster of its
own on that bridge (migrated, demo configuration seeded), and runs porter-worker processes on the
hosts: a burn-down of the demo's background pool at each host count, one step through PgBouncer
(transaction mode), then a partition (a host's link cut) and an immediate database restart.

Options:
  --hosts <list>        host counts of the burn-down steps (default 1,2,4,8)
  --per-host <n>        worker processes per host (default 1)
  --concurrency <n>     slots per worker process (default 16)
  --db-pool-size <n>    each worker's pool size (default 4)
  --jobs <n>            jobs per burn-down step (default 2000)
  --handler-ms <n>      each job's handler sleeps this long plus 0–20 ms (default 50), so a host's
                        slots, not its share of the CPU, bound what it runs
  --pgbouncer-hosts <n> host count of the PgBouncer step (default 4; 0: no such step)
  --no-faults           skip the partition and restart
  --budget-s <s>        give up (and clean up) after this many seconds (default 900)
  --out <file>          also write the tables (markdown) to this file
  -h, --help            show this help
`;

const progress = (line: string) => process.stderr.write(`[scale +${((Date.now() - began) / 1000).toFixed(1)}s] ${line}\n`);
const began = Date.now();

const main = async (): Promise<void> => {
  const { values } = parseArgs({
    options: {
      hosts: { type: "string", default: "1,2,4,8" },
      "per-host": { type: "string", default: "1" },
      concurrency: { type: "string", default: "16" },
      "db-pool-size": { type: "string", default: "4" },
      jobs: { type: "string", default: "2000" },
      "handler-ms": { type: "string", default: "50" },
      "pgbouncer-hosts": { type: "string", default: "4" },
      "no-faults": { type: "boolean" },
      "budget-s": { type: "string", default: "900" },
      out: { type: "string" },
      help: { type: "boolean", short: "h" },
    },
  });
  if (values.help) {
    process.stdout.write(USAGE);
    return;
  }
  const refusal = canBuildNetwork();
  if (refusal) {
    process.stderr.write(`${refusal}\n`);
    process.exit(2);
  }
  const hostCounts = values.hosts.split(",").map(Number);
  const perHost = Number(values["per-host"]);
  const concurrency = Number(values.concurrency);
  const poolSize = Number(values["db-pool-size"]);
  const jobs = Number(values.jobs);
  const handlerBaseMs = Number(values["handler-ms"]);
  const bouncerHosts = Number(values["pgbouncer-hosts"]);
  const budgetMs = Number(values["budget-s"]) * 1000;
  if (
    [...hostCounts, perHost, concurrency, poolSize, jobs].some((n) => !Number.isInteger(n) || n < 1)
    || !Number.isInteger(bouncerHosts)
    || !Number.isInteger(handlerBaseMs)
    || handlerBaseMs < 0
  ) {
    process.stderr.write(`invalid option\n\n${USAGE}`);
    process.exit(2);
  }

  let fleet: WorkerProc[] = [];
  let database: ScaleDatabase | undefined;
  let bouncer: PgBouncer | undefined;
  let isCleaned = false;
  const cleanup = async () => {
    if (isCleaned) return;
    isCleaned = true;
    for (const p of fleet) p.child.kill("SIGKILL");
    await bouncer?.stop().catch(() => undefined);
    await database?.db.end().catch(() => undefined);
    await database?.cluster.stop().catch(() => undefined);
    removeNetwork();
    cleanStaleRun();
  };
  const onSignal = (signal: NodeJS.Signals) => {
    progress(`${signal}: cleaning up`);
    void cleanup().finally(() => process.exit(130));
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  const budget = setTimeout(() => {
    progress(`over the budget of ${budgetMs / 1000} s: cleaning up`);
    void cleanup().finally(() => process.exit(1));
  }, budgetMs);

  try {
    const stale = cleanStaleRun();
    if (stale.length > 0) progress(`cleaned a killed run's leftovers: ${stale.join(", ")}`);
    const staleNamespaces = createBridge();
    if (staleNamespaces.length > 0) progress(`removed a killed run's namespaces (and what ran in them): ${staleNamespaces.join(", ")}`);
    const maxHosts = Math.max(...hostCounts, bouncerHosts, values["no-faults"] ? 0 : 3);
    const hosts: Host[] = Array.from({ length: maxHosts }, (_, i) => createHost(i + 1));
    progress(`bridge and ${hosts.length} host namespaces up; load average ${loadavg()[0]!.toFixed(1)}`);
    database = await startDatabase(progress);
    const direct: Connection = { poolUrl: database.url, isPooled: false };

    const results: StepResult[] = [];
    const stepOf = async (label: string, stepHosts: number, i: number, viaPgBouncer: boolean) => {
      progress(`step ${label}: fleet up (${fleet.length} processes); preloading ${jobs} jobs`);
      const result = await runStep(database!, fleet, {
        label,
        hosts: stepHosts,
        jobs,
        handlerBaseMs,
        tag: `s${i}`,
        viaPgBouncer,
        ...(bouncer ? { pgbouncerAdminUrl: bouncer.adminUrl } : {}),
        timeoutMs: 180_000,
      });
      results.push(result);
      progress(`step ${label}: ${fmt(result.jobsPerSecond)} jobs/s, DB CPU ${fmt(result.dbCpuCores, 2)} cores`);
    };
    // Direct steps: the fleet grows host by host (a process starts in seconds only on an idle machine).
    const sorted = [...hostCounts].sort((a, b) => a - b);
    for (const [i, n] of sorted.entries()) {
      progress(`step ${n} host(s): starting ${(n - fleet.length / perHost) * perHost} more worker processes`);
      fleet.push(...(await startFleet(hosts.slice(fleet.length / perHost, n), { perHost, concurrency, poolSize, connection: direct, timeoutMs: 180_000 })));
      await stepOf(`${n} host${n > 1 ? "s" : ""}`, n, i, false);
    }

    let checks: Check[] = [];
    if (!values["no-faults"]) {
      // The faults run on three hosts of the direct fleet: the others drain and stop.
      const faultHosts = hosts.slice(0, 3);
      const extra = fleet.filter((p) => !faultHosts.includes(p.host));
      await stopFleet(extra);
      fleet = fleet.filter((p) => faultHosts.includes(p.host));
      if (fleet.length < faultHosts.length * perHost) {
        const have = new Set(fleet.map((p) => p.host));
        fleet.push(
          ...(await startFleet(
            faultHosts.filter((h) => !have.has(h)),
            { perHost, concurrency, poolSize, connection: direct, timeoutMs: 180_000 },
          )),
        );
      }
      progress(`faults: ${fleet.length} processes on 3 hosts (diag.effect jobs, 5 s leases)`);
      checks = [
        ...(await runPartition(database, faultHosts, fleet, { jobs: 2000, ms: 300, downMs: 15_000, progress })),
        ...(await runRestart(database, faultHosts, fleet, { jobs: 1500, ms: 100, progress })),
      ];
    }
    await stopFleet(fleet);
    fleet = [];

    if (bouncerHosts > 0) {
      const binary = ensurePgBouncer(progress);
      // Server connections: half of what the pools could open directly.
      bouncer = await startPgBouncer(binary, database.cluster, Math.max(4, Math.ceil((bouncerHosts * perHost * poolSize) / 2)));
      const label = `${bouncerHosts} hosts, PgBouncer (transaction mode)`;
      progress(`step ${label}: starting ${bouncerHosts * perHost} worker processes`);
      fleet = await startFleet(hosts.slice(0, bouncerHosts), {
        perHost,
        concurrency,
        poolSize,
        connection: { poolUrl: bouncer.url, listenUrl: database.url, isPooled: true },
        timeoutMs: 180_000,
      });
      await stepOf(label, bouncerHosts, sorted.length, true);
      await stopFleet(fleet);
      fleet = [];
      await bouncer.stop();
      bouncer = undefined;
    }

    const report = formatReport(results, checks, { perHost, concurrency, poolSize, jobs, handlerBaseMs });
    process.stdout.write(`${report}\n`);
    if (values.out) writeFileSync(values.out, `${report}\n`);
    if (checks.some((c) => !c.ok) || results.some((r) => !r.caps.held || r.duplicates > 0 || r.lost > 0)) process.exitCode = 1;
  } finally {
    clearTimeout(budget);
    await cleanup();
    progress("cleaned up: namespaces, bridge, PgBouncer, cluster removed");
  }
};

const formatReport = (
  results: StepResult[],
  checks: Check[],
  o: { perHost: number; concurrency: number; poolSize: number; jobs: number; handlerBaseMs: number },
): string => {
  const base = results[0]?.jobsPerSecond ?? Number.NaN;
  const table = markdownTable(
    [
      "step",
      "hosts",
      "processes",
      "connections (PgBouncer clients)",
      "burn-down jobs/s (ks.background)",
      "× 1 host",
      "release→claim p99 ms",
      "claim p99 ms",
      "DB CPU cores",
      "DB CPU ms/job",
      "caps held (peak bulk/harvester)",
      "fair share held (C's share min–max)",
      "claimed twice / lost",
    ],
    results.map((r) => [
      r.label,
      String(r.hosts),
      String(r.processes),
      `${r.serverConnections} from ${r.clientAddresses} addr.${r.pgbouncerClients === undefined ? "" : ` (${r.pgbouncerClients})`}`,
      fmt(r.jobsPerSecond),
      fmt(r.jobsPerSecond / base, 2),
      fmt(r.startP99Ms),
      fmt(r.claimP99Ms, 1),
      fmt(r.dbCpuCores, 2),
      fmt(r.dbCpuMsPerJob, 2),
      `${r.caps.held ? "yes" : "NO"} (${r.caps.peak["email.bulk"] ?? 0}/${r.caps.peak["harvester.sync"] ?? 0}, ${r.samples} samples)`,
      r.fair.windows === 0
        ? "– (no window)"
        : `${r.fair.held ? "yes" : "NO"} (${fmt(r.fair.cShareMin, 2)}–${fmt(r.fair.cShareMax, 2)}, ${r.fair.windows} windows)`,
      `${r.duplicates} / ${r.lost}`,
    ]),
  );
  const where = results
    .map((r) => {
      const waits = r.waits
        .slice(0, 4)
        .map((w) => `${w.event} ${w.n}`)
        .join(", ");
      const top = r.statements
        .slice(0, 3)
        .map((s) => `\`${s.query.slice(0, 60)}\` ${fmt(s.totalMs)} ms (${s.calls} calls, ${fmt(s.meanMs, 2)} ms mean)`)
        .join("; ");
      return `- **${r.label}**: active backends by wait event (summed over samples): ${waits || "none"}. Top statements: ${top}`;
    })
    .join("\n");
  const invariants =
    checks.length > 0
      ? markdownTable(
          ["invariant", "result", "held"],
          checks.map((c) => [c.check, c.result, c.ok ? "yes" : "NO"]),
        )
      : "(faults skipped)";
  return [
    `## npm run scale — ${new Date().toISOString()}`,
    "",
    `${o.jobs} jobs per step (demo pool background: ks.background, email.bulk cap 8, harvester.sync cap 4; tenants A/B/C weights 1/1/2; handlers of ${o.handlerBaseMs}–${o.handlerBaseMs + 20} ms), ${o.perHost} worker process(es) per host, concurrency ${o.concurrency}, pool ${o.poolSize} + LISTEN + maintenance per process; machine load average ${loadavg()
      .map((l) => l.toFixed(1))
      .join(" / ")}.`,
    "",
    table,
    "",
    results.some((r) => r.overrunMs > 0)
      ? `The preload overran the common release in: ${results
          .filter((r) => r.overrunMs > 0)
          .map((r) => `${r.label} (${fmt(r.overrunMs)} ms)`)
          .join(", ")} — its first jobs started early.\n`
      : "",
    "Where the database spends its time:",
    "",
    where,
    "",
    invariants,
  ].join("\n");
};

main().catch((error: unknown) => {
  process.stderr.write(`npm run scale failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exitCode = 1;
});
