// The scaling simulation: `npm run sim -w @porter/bench -- [flags]` (`--help`). Prints the limits
// of one primary and every design's throughput at 1–16 primaries (docs/scaling.md).
import { parseArgs } from "node:util";
import { BATCH_COST, DEFAULT_CONSOLE, DEFAULT_COST, DEFAULT_GLOBAL_CAP, FLEET_BATCHES, hardware, MEASURED } from "./defaults";
import { tenantMix } from "./model";
import { designsTable, limitsTable, type SimParams } from "./report";

const HELP = `npm run sim -w @porter/bench -- [--seed N] [--tenants N] [--whale SHARE] [--zipf S] [--cores N]
                                   [--primaries 1,2,4,8,16] [--replicas N] [--console-cores C] [--fan-out SHARE] [--split-whale K]

A capacity model of Porter on N PostgreSQL primaries (bench/src/sim/model.ts), fed with the per-job
costs measured by \`npm run costs -w @porter/bench\` (bench/src/sim/defaults.ts). Deterministic: the
same flags print the same tables.
  --seed N          seed of the static tenant → shard hash map (default 1)
  --tenants N       tenants (default 1000)
  --whale SHARE     the largest tenant's share of all jobs (default 0.15)
  --zipf S          Zipf exponent of the other tenants' shares (default 0.8)
  --cores N         cores per primary in the designs table (default 16)
  --primaries LIST  primary counts (default 1,2,4,8,16)
  --replicas N      read replicas in the replicas design (default 2)
  --console-cores C PostgreSQL cores the console's reads take on one primary (default 1)
  --fan-out SHARE   share of the console's reads that span every tenant (default 0.3)
  --split-whale K   also show the rebalanced design with the whale split into K sub-tenants (default 4; 1: not)`;

const { values } = parseArgs({
  options: {
    help: { type: "boolean", default: false },
    seed: { type: "string", default: "1" },
    tenants: { type: "string", default: "1000" },
    whale: { type: "string", default: "0.15" },
    zipf: { type: "string", default: "0.8" },
    cores: { type: "string", default: "16" },
    primaries: { type: "string", default: "1,2,4,8,16" },
    replicas: { type: "string", default: "2" },
    "console-cores": { type: "string", default: String(DEFAULT_CONSOLE.cpuUsPerSec / 1e6) },
    "fan-out": { type: "string", default: String(DEFAULT_CONSOLE.fanOutShare) },
    "split-whale": { type: "string", default: "4" },
  },
});
if (values.help) {
  console.log(HELP);
  process.exit(0);
}
const num = (name: string, v: string, min: number, max: number): number => {
  const n = Number(v);
  if (!Number.isFinite(n) || n < min || n > max) {
    console.error(`--${name} must be a number in ${min}…${max} (got ${v})`);
    process.exit(2);
  }
  return n;
};

const params: SimParams = {
  cost: DEFAULT_COST,
  batchCost: BATCH_COST,
  hardware,
  console: { cpuUsPerSec: num("console-cores", values["console-cores"], 0, 64) * 1e6, fanOutShare: num("fan-out", values["fan-out"], 0, 1) },
  cap: DEFAULT_GLOBAL_CAP,
  mix: tenantMix(num("tenants", values.tenants, 1, 1e6), num("whale", values.whale, 0, 1), num("zipf", values.zipf, 0, 5)),
  coresPerPrimary: num("cores", values.cores, 1, 1024),
  primaries: values.primaries.split(",").map((v) => num("primaries", v, 1, 1024)),
  replicas: num("replicas", values.replicas, 0, 16),
  seed: num("seed", values.seed, 0, 2 ** 31),
  seeds: 50,
  splitWhale: num("split-whale", values["split-whale"], 1, 64),
};

const c = params.cost;
console.log(
  `## Per-job costs the model charges (measured: bench/src/sim/defaults.ts)
one job per call: PostgreSQL CPU ${c.cpuUs.toFixed(1)} µs, WAL ${c.walBytes} B (full-page images of a checkpoint included), `
    + `${c.commitsPerJob.toFixed(3)} flushed commits (jobs per commit: enqueue ${FLEET_BATCHES.enqueue}, claim ${FLEET_BATCHES.claim}, ack ${FLEET_BATCHES.ack}), ${c.wireBytes} B on the wire
batches of 1000: PostgreSQL CPU ${params.batchCost.cpuUs.toFixed(1)} µs, ${params.batchCost.commitsPerJob.toFixed(3)} flushed commits; the rest as above
(heartbeat, per lease/3 of a long job: ${MEASURED.heartbeat.cpuUs} µs, ${MEASURED.heartbeat.walBytes} B WAL — not charged: the jobs are short)
`,
);
console.log("## One primary's ceilings (no console load)\n");
console.log(limitsTable(params, [8, 16, 32, 64]));
const top = params.mix[0]!;
console.log(
  `\n## Designs: ${params.coresPerPrimary} cores per primary, ${params.mix.length} tenants (whale ${(top * 100).toFixed(1)}%, the rest Zipf ${values.zipf}; next largest ${((params.mix[1] ?? 0) * 100).toFixed(2)}%), `
    + `console ${values["console-cores"]} core(s) of reads (${(params.console.fanOutShare * 100).toFixed(0)}% fan-out), static map seed ${params.seed}\n`,
);
console.log(designsTable(params));
