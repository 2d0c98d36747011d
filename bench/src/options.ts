import { parseArgs } from "node:util";
import type { Sizes } from "./scenarios/common";
import { type SystemName, VARIANTS, type Variant } from "./variants";

const SCENARIOS = ["a", "b", "c", "d", "e", "f", "g", "h", "i"] as const;
export type ScenarioId = (typeof SCENARIOS)[number];

export const SCENARIO_NAMES: Record<ScenarioId, string> = {
  a: "batch-enqueue",
  b: "single-enqueue",
  c: "burn-down",
  d: "steady",
  e: "idle",
  f: "backlog",
  g: "failures",
  h: "fairness",
  i: "realistic",
};

export const HELP = `npm run bench -- [--quick] [--scenario a,c|burn-down,...] [--systems porter,graphile,pgboss]
                      [--runs N] [--burn-down-jobs N] [--concurrency N] [--connections N] [--no-pgbench]

Porter side by side with graphile-worker and pg-boss on the same PostgreSQL (DATABASE_URL, an admin
connection; default postgres://postgres@127.0.0.1:5432/postgres), a fresh database per system per run.
Scenarios: a batch-enqueue, b single-enqueue, c burn-down, d steady, e idle, f backlog, g failures,
h fairness (Porter only: tenant shares, Jain's index, quiet tenants' waits, policy on vs off),
i realistic (the demo's pool: 4 queues, 2 capped, tenants weighted 1/1/2, jobs of 0–20 ms; peers on
their nearest configuration).
  --quick          fewer jobs, 1 measured run, (f) at 10k vs 50k, the peers' default configurations
                   only in (c), one warm-up pass for all: under 5 minutes
  --scenario S     run only these (letters or names, comma-separated; default all)
  --systems S      porter,graphile,pgboss (default all; a peer runs both default and tuned)
  --runs N         measured runs after the warm-up (default 3; quick 1; the peers' default
                   configurations run once)
  --burn-down-jobs N  jobs per (c) burn-down (default 200k; quick 60k)
  --concurrency N  jobs run at once by every worker (default 24)
  --connections N  pool size of every worker and producer (default concurrency + 2)
  --no-pgbench     skip the commit-ceiling measurement
Progress goes to stderr; the tables to stdout and bench/results/<timestamp>.{json,md}.`;

export const FULL: Sizes = {
  runs: 3,
  defaultRuns: 1,
  enqueueJobs: 20_000,
  enqueueJobsLarge: 100_000,
  singleSeconds: 1.5,
  burnDownJobs: 200_000,
  burnDownCapS: 90,
  defaultCapS: 8,
  steadySeconds: 3,
  idleSamples: 60,
  idleCapS: 6,
  backlogSmall: 10_000,
  backlogLarge: 1_000_000,
  backlogWindow: 20_000,
  // ~60 claims a window: their p99 was the slowest claim of one window. Three windows pool ~180.
  backlogDrains: 3,
  failureJobs: 5_000,
  failureTargetS: 10,
  failureCapS: 45,
  realisticJobs: 60_000,
  realisticCapS: 90,
  realisticArrivals: 1_000,
  realisticSeconds: 6,
};

const QUICK: Sizes = {
  runs: 1,
  defaultRuns: 1,
  enqueueJobs: 5_000,
  enqueueJobsLarge: 20_000,
  singleSeconds: 0.75,
  // 60k, not 15k: at 15k Porter's adaptive prefetch is still ramping up (139 jobs per claim against
  // 249–349 at 60k) and start-up weighs on a 2 s run: quick ratios were half of full mode's. At 60k,
  // with each backlog settled before its drain, they came within 20% of full's in 8 of 9
  // comparisons (2026-12-04); (c) prints those figures under its ratios.
  burnDownJobs: 60_000,
  burnDownCapS: 30,
  defaultCapS: 4,
  steadySeconds: 2,
  idleSamples: 30,
  idleCapS: 3,
  backlogSmall: 10_000,
  backlogLarge: 50_000,
  backlogWindow: 4_000,
  backlogDrains: 1,
  failureJobs: 2_000,
  failureTargetS: 10,
  failureCapS: 15,
  realisticJobs: 6_000,
  realisticCapS: 15,
  realisticArrivals: 1_000,
  realisticSeconds: 2,
};

export type Options = {
  quick: boolean;
  scenarios: ScenarioId[];
  variants: Variant[];
  sizes: Sizes;
  concurrency: number;
  connections: number;
  pgbench: boolean;
  help: boolean;
};

export const parseOptions = (argv: string[]): Options => {
  const { values } = parseArgs({
    args: argv,
    options: {
      quick: { type: "boolean", default: false },
      scenario: { type: "string" },
      systems: { type: "string" },
      runs: { type: "string" },
      "burn-down-jobs": { type: "string" },
      concurrency: { type: "string", default: "24" },
      connections: { type: "string" },
      "no-pgbench": { type: "boolean", default: false },
      help: { type: "boolean", short: "h", default: false },
    },
  });
  const sizes = { ...(values.quick ? QUICK : FULL) };
  if (values.runs) sizes.runs = positive("--runs", values.runs);
  if (values["burn-down-jobs"]) sizes.burnDownJobs = positive("--burn-down-jobs", values["burn-down-jobs"]);
  const scenarios = values.scenario
    ? values.scenario.split(",").map((s) => {
        const id = SCENARIOS.find((x) => x === s.trim() || SCENARIO_NAMES[x] === s.trim());
        if (!id) throw new Error(`unknown scenario "${s}" (one of ${SCENARIOS.map((x) => `${x}/${SCENARIO_NAMES[x]}`).join(", ")})`);
        return id;
      })
    : [...SCENARIOS];
  const systems = (values.systems ?? "porter,graphile,pgboss").split(",").map((s) => {
    const name = s
      .trim()
      .replace(/^pg-boss$/, "pgboss")
      .replace(/^graphile-worker$/, "graphile");
    if (!["porter", "graphile", "pgboss"].includes(name)) throw new Error(`unknown system "${s}" (porter, graphile, pgboss)`);
    return name as SystemName;
  });
  const concurrency = positive("--concurrency", values.concurrency);
  return {
    quick: values.quick,
    scenarios: SCENARIOS.filter((s) => scenarios.includes(s)),
    variants: VARIANTS.filter((v) => systems.includes(v.system)),
    sizes,
    concurrency,
    connections: values.connections ? positive("--connections", values.connections) : concurrency + 2,
    pgbench: !values["no-pgbench"],
    help: values.help,
  };
};

const positive = (name: string, value: string): number => {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new Error(`${name} must be a positive integer, got "${value}"`);
  return n;
};
