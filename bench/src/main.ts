import { mkdirSync, writeFileSync } from "node:fs";
import os from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { dropLeftovers, readServerInfo, type ServerInfo } from "./database";
import { HELP, parseOptions, SCENARIO_NAMES, type ScenarioId } from "./options";
import { type CommitCeiling, measureCommitCeiling } from "./pgbench";
import { createProgress } from "./progress";
import { scenarioMarkdown } from "./report";
import { backlog } from "./scenarios/backlog";
import { burnDown, estimateMaxRates, warmUp } from "./scenarios/burn-down";
import { type BenchContext, isPeerDefault, type ScenarioResult } from "./scenarios/common";
import { batchEnqueue, singleEnqueue } from "./scenarios/enqueue";
import { failures } from "./scenarios/failures";
import { FAIRNESS_FULL, FAIRNESS_QUICK, fairness } from "./scenarios/fairness";
import { idleLatency, steadyArrivals } from "./scenarios/latency";
import { realistic } from "./scenarios/realistic";
import { fmt, markdownTable } from "./table";
import { targetsMarkdown } from "./targets";
import { isBurnDownOnly } from "./variants";
import { childForm } from "./worker/bundle";

const options = parseOptions(process.argv.slice(2));
if (options.help) {
  console.log(HELP);
  process.exit(0);
}
const adminUrl = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const progress = createProgress();
const startedAt = Date.now();
const stamp = new Date().toISOString().replace(/[:.]/g, "-");
const dir = join(dirname(fileURLToPath(import.meta.url)), "..", "results");

const serverInfo = async (): Promise<ServerInfo> => {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    return await readServerInfo(client);
  } finally {
    await client.end();
  }
};

const leftovers = await dropLeftovers(adminUrl);
if (leftovers) progress.done(`dropped ${leftovers} database(s) left by an interrupted run`);
const server = await serverInfo();
const environment = {
  node: process.version,
  postgres: server.version,
  settings: server.settings,
  cpus: os.cpus().length,
  cpu: os.cpus()[0]?.model ?? "?",
  mode: options.quick ? "quick" : "full",
  concurrency: options.concurrency,
  connections: options.connections,
};
progress.done(
  `bench (${environment.mode}): PostgreSQL ${environment.postgres}, ${environment.cpus} cores, Node ${environment.node}; `
    + `${options.variants.map((v) => v.id).join(", ")}; scenarios ${options.scenarios.join(",")}`,
);
progress.done(`server settings: ${environment.settings}`);

let ceiling: CommitCeiling | undefined;
if (options.pgbench) {
  progress.update("pgbench: measuring the commit ceiling…");
  ceiling = await measureCommitCeiling(adminUrl, options.quick ? 3 : 10);
  progress.done(`pgbench -N, 8 clients: ${fmt(ceiling.syncOnTps)} commits/s (synchronous_commit on), ${fmt(ceiling.syncOffTps)} (off)`);
}

const ctx: BenchContext = {
  adminUrl,
  budget: { concurrency: options.concurrency, connections: options.connections },
  sizes: options.sizes,
  progress,
  variants: options.variants,
  maxRates: new Map(),
};
const runners: Record<Exclude<ScenarioId, "h">, (c: BenchContext) => Promise<ScenarioResult | ScenarioResult[]>> = {
  a: batchEnqueue,
  b: singleEnqueue,
  c: burnDown,
  d: steadyArrivals,
  e: idleLatency,
  f: backlog,
  g: failures,
  i: realistic,
};

/** Quick mode shows the peers' default configurations in the burn-down only (where they differ most). */
const variantsFor = (id: ScenarioId | "warm-up") =>
  (options.quick && id !== "c" && !(id === "warm-up" && options.scenarios.join() === "c")
    ? ctx.variants.filter((v) => !isPeerDefault(v))
    : ctx.variants
  ).filter((v) => id === "c" || (id === "warm-up" && options.scenarios.includes("c")) || !isBurnDownOnly(v));

const results: ScenarioResult[] = [];
/** Scenarios with a table of their own shape (h: fairness), in markdown. */
const extras: Array<{ markdown: string; details: unknown }> = [];
const timings: Record<string, number> = {};

/** How the worker processes and the producer API's server run their code (worker/bundle.ts). */
const workerForm = childForm();

const header = (): string => {
  const lines = [
    `## Porter vs graphile-worker vs pg-boss — ${new Date(startedAt).toISOString()} (${environment.mode})`,
    "",
    `PostgreSQL ${environment.postgres}, ${environment.cpus} × ${environment.cpu}, Node ${environment.node}. `
      + `Every worker: ${ctx.budget.concurrency} jobs at once, ${ctx.budget.connections} pool connections, one process${workerForm}; `
      + `producers: ${ctx.budget.connections} connections. ${ctx.sizes.runs} measured run(s) (the peers' default configurations: ${ctx.sizes.defaultRuns}) after a discarded warm-up, interleaved; median (min–max).`,
    "",
    `Server settings: ${environment.settings}.`,
  ];
  if (ceiling) {
    lines.push(
      "",
      markdownTable(
        ["commit ceiling (pgbench -N, 8 clients, same run)", "tps"],
        [
          ["synchronous_commit on", fmt(ceiling.syncOnTps)],
          ["synchronous_commit off", fmt(ceiling.syncOffTps)],
        ],
      ),
    );
  }
  lines.push(
    "",
    markdownTable(
      ["system", "settings beyond the shared budget"],
      options.variants.map((v) => [v.label, v.settings]),
    ),
  );
  return lines.join("\n");
};

const save = (final: boolean) => {
  const report = [
    header(),
    ...results.map(scenarioMarkdown),
    ...extras.map((e) => e.markdown),
    ...(results.length > 0 ? [targetsMarkdown(results, environment.mode === "quick" ? "quick" : "full")] : []),
  ].join("\n\n");
  const elapsed = `total ${fmt((Date.now() - startedAt) / 1000)} s (${Object.entries(timings)
    .map(([k, v]) => `${k} ${fmt(v)} s`)
    .join(", ")})`;
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, `${stamp}.json`),
    JSON.stringify(
      {
        at: new Date(startedAt).toISOString(),
        final,
        environment,
        options,
        ceiling,
        timings,
        maxRates: Object.fromEntries(ctx.maxRates),
        results,
        extras: extras.map((e) => e.details),
      },
      null,
      2,
    ),
  );
  writeFileSync(join(dir, `${stamp}.md`), `${report}\n\n${elapsed}\n`);
  return `${report}\n\n${elapsed}`;
};

{
  const t0 = Date.now();
  await warmUp({ ...ctx, variants: variantsFor("warm-up") });
  timings["warm-up"] = (Date.now() - t0) / 1000;
}
for (const id of options.scenarios) {
  const t0 = Date.now();
  if (id === "h") {
    if (options.variants.some((v) => v.system === "porter")) {
      extras.push(await fairness(adminUrl, options.quick ? FAIRNESS_QUICK : FAIRNESS_FULL, progress));
      timings[`${id} ${SCENARIO_NAMES[id]}`] = (Date.now() - t0) / 1000;
      save(false);
    }
    continue;
  }
  const variants = variantsFor(id);
  if ((id === "d" || id === "g") && variants.some((v) => !ctx.maxRates.has(v.id))) {
    progress.done(`(${id}) needs each system's maximum: measuring a short burn-down first`);
    await estimateMaxRates({ ...ctx, variants });
  }
  results.push(...[await runners[id]({ ...ctx, variants })].flat());
  timings[`${id} ${SCENARIO_NAMES[id]}`] = (Date.now() - t0) / 1000;
  save(false);
  progress.done(`(${id}) ${SCENARIO_NAMES[id]} finished in ${fmt((Date.now() - t0) / 1000)} s`);
}

const report = save(true);
console.log(`\n${report}`);
progress.done(`results written to bench/results/${stamp}.{json,md}`);
process.exit(0);
