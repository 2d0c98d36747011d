import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { measureCommitCeiling } from "./pgbench";
import { porterBurnDown, type BurnDownResult } from "./porter";
import { createProgress } from "./progress";
import { fmt, markdownTable, median, medianRange } from "./table";

const HELP = `npm run bench -- [--quick] [--jobs N] [--runs N] [--concurrency N]

Porter's end-to-end burn-down (N no-op jobs enqueued in batches of 1000, then drained by one
worker process), with the machine's commit ceiling (pgbench) measured in the same run.
  --quick          20k jobs, 1 run after a discarded warm-up, pgbench 5 s (well under 5 minutes)
  --jobs N         jobs per run (default 200000; quick 20000)
  --runs N         measured runs (default 3; quick 1)
  --concurrency N  worker slots (default 24)
Env: DATABASE_URL — an admin connection to the PostgreSQL server to use (default local 5432);
a fresh database is created per run and dropped after it.`;

const { values } = parseArgs({
  options: {
    quick: { type: "boolean", default: false },
    jobs: { type: "string" },
    runs: { type: "string" },
    concurrency: { type: "string", default: "24" },
    help: { type: "boolean", short: "h", default: false },
  },
});
if (values.help) {
  console.log(HELP);
  process.exit(0);
}
const quick = values.quick;
const jobs = Number(values.jobs ?? (quick ? 20_000 : 200_000));
const runs = Number(values.runs ?? (quick ? 1 : 3));
const concurrency = Number(values.concurrency);
const adminUrl = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const progress = createProgress();

progress.update("pgbench: measuring the commit ceiling…");
const ceiling = await measureCommitCeiling(adminUrl, quick ? 5 : 10);
progress.done(`pgbench -N, 8 clients: ${fmt(ceiling.syncOnTps)} commits/s (synchronous_commit on), ${fmt(ceiling.syncOffTps)} (off)`);

progress.update("warm-up run (discarded)…");
await porterBurnDown(adminUrl, { jobs: Math.min(jobs, 5_000), batch: 1000, concurrency, poolSize: 10, progress });
const results: BurnDownResult[] = [];
for (let run = 1; run <= runs; run++) {
  const r = await porterBurnDown(adminUrl, { jobs, batch: 1000, concurrency, poolSize: 10, progress });
  results.push(r);
  progress.done(`run ${run}/${runs}: enqueue ${fmt(r.enqueueJobsPerS)} jobs/s, burn-down ${fmt(r.burnDownJobsPerS)} jobs/s`);
}

const table = markdownTable(
  ["system", "jobs", "enqueue jobs/s (batches of 1000)", "burn-down jobs/s", "commits/job", "WAL bytes/job", "dead tuples/job"],
  [
    [
      "porter",
      fmt(jobs),
      medianRange(results.map((r) => r.enqueueJobsPerS)),
      medianRange(results.map((r) => r.burnDownJobsPerS)),
      fmt(median(results.map((r) => r.perJob.commits)), 3),
      fmt(median(results.map((r) => r.perJob.walBytes))),
      fmt(median(results.map((r) => r.perJob.deadTuples)), 2),
    ],
  ],
);
const ceilingTable = markdownTable(
  ["commit ceiling (pgbench -N, 8 clients)", "tps"],
  [
    ["synchronous_commit on", fmt(ceiling.syncOnTps)],
    ["synchronous_commit off", fmt(ceiling.syncOffTps)],
  ],
);
const report = `${ceilingTable}\n\n${table}\n\nworker concurrency ${concurrency}, ${runs} measured run(s), median (min–max)`;
console.log(`\n${report}`);

const stamp = new Date().toISOString().replace(/[:.]/g, "-");
const dir = join(dirname(fileURLToPath(import.meta.url)), "..", "results");
mkdirSync(dir, { recursive: true });
writeFileSync(join(dir, `${stamp}.json`), JSON.stringify({ at: new Date().toISOString(), quick, jobs, runs, concurrency, ceiling, results }, null, 2));
writeFileSync(join(dir, `${stamp}.md`), `${report}\n`);
progress.done(`results written to bench/results/${stamp}.{json,md}`);
process.exit(0);
