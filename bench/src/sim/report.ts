// The simulation's tables (pure: parameters in, markdown out), printed by main.ts and pasted into
// docs/scaling.md.
import { fmt, markdownTable, median } from "../table";
import {
  type ConsoleLoad,
  type Constraint,
  constraintsOf,
  type Design,
  evaluate,
  type GlobalCap,
  type Hardware,
  type JobCost,
  type Outcome,
  placementOf,
  solve,
} from "./model";

export type SimParams = {
  cost: JobCost;
  batchCost: JobCost;
  hardware: (cores: number) => Hardware;
  console: ConsoleLoad;
  cap: GlobalCap;
  mix: number[];
  coresPerPrimary: number;
  primaries: number[];
  replicas: number;
  seed: number;
  /** Seeds the static map is drawn with for its spread column. */
  seeds: number;
  /** Sub-tenants the whale is split into in an extra rebalanced design (1: no such rows). */
  splitWhale: number;
};

const RESOURCE_LABEL: Record<Constraint["resource"], string> = {
  cpu: "CPU",
  commits: "commit flushes",
  wal: "WAL bandwidth",
  network: "network",
  replay: "replica replay",
  counter: "global cap counter",
};

/** "CPU @ primary 3 (whale + 12 tenants, 27% of jobs)"; the mix's first `whaleParts` tenants are the whale. */
const describe = (o: Outcome, mix: number[], design: Design, whaleParts = 1): string => {
  const b = o.bottleneck;
  const label = `${RESOURCE_LABEL[b.resource]} @ ${b.where}`;
  if (b.shard === null || o.shardShares.length === 1) return label;
  const placement = placementOf(design, mix);
  const tenants = mix.map((_, t) => t).filter((t) => placement[t] === b.shard);
  const parts = tenants.filter((t) => t < whaleParts).length;
  const others = tenants.length - parts;
  const whale = whaleParts === 1 ? "whale" : `${parts} of the whale's ${whaleParts} parts`;
  const who = parts > 0 ? (others > 0 ? `${whale} + ${others} tenants` : whaleParts === 1 ? "the whale alone" : whale) : `${others} tenants`;
  return `${label} (${who}, ${fmt(o.shardShares[b.shard]! * 100, 1)}% of jobs)`;
};

/** The mix with its first tenant (the whale) split into `parts` equal sub-tenants, placed first. */
export const splitWhale = (mix: number[], parts: number): number[] => [...Array.from({ length: parts }, () => mix[0]! / parts), ...mix.slice(1)];

/** Table 1: one primary's ceiling per resource at each core count, for both producer styles. */
export const limitsTable = (p: SimParams, coreCounts: number[]): string => {
  const rows: string[][] = [];
  for (const [label, cost] of [
    ["one job per call", p.cost],
    ["batches of 1000", p.batchCost],
  ] as const) {
    for (const cores of coreCounts) {
      const hw = p.hardware(cores);
      const { constraints } = constraintsOf({ kind: "single" }, hw, cost, p.mix, { cpuUsPerSec: 0, fanOutShare: 0 });
      const at = (r: Constraint["resource"]) => solve(constraints.filter((c) => c.resource === r)).throughput;
      const { throughput, bottleneck } = solve(constraints);
      rows.push([
        label,
        String(cores),
        fmt(constraints.find((c) => c.resource === "cpu")!.capacity / 1e6 / hw.cpuHeadroom / hw.coreSpeed, 1),
        fmt(at("cpu")),
        fmt(at("commits")),
        fmt(at("wal")),
        fmt(at("network")),
        `**${fmt(throughput)}** (${RESOURCE_LABEL[bottleneck.resource]})`,
        `${fmt((throughput * cost.walBytes) / 1e6, 0)} MB/s`,
      ]);
    }
  }
  return markdownTable(
    [
      "producers",
      "cores",
      "effective cores",
      "CPU ceiling",
      "commit ceiling",
      "WAL ceiling",
      "network ceiling",
      "jobs/s (first to saturate)",
      "WAL at that rate",
    ],
    rows,
  );
};

/** Table 2: every design at each primary count: throughput and where it saturates. */
export const designsTable = (p: SimParams): string => {
  const hw = p.hardware(p.coresPerPrimary);
  const base = evaluate({ kind: "single" }, hw, p.cost, p.mix, p.console).throughput;
  const rows: string[][] = [];
  const add = (name: string, n: number, design: Design, spread?: string, mix = p.mix, whaleParts = 1) => {
    const o = evaluate(design, hw, p.cost, mix, p.console);
    const cpu = o.cpuUtilisation;
    rows.push([
      name,
      String(n),
      fmt(o.throughput),
      `${fmt(o.throughput / base, 2)}×`,
      describe(o, mix, design, whaleParts),
      cpu.length > 1 ? `${fmt(Math.min(...cpu) * 100)}–${fmt(Math.max(...cpu) * 100)}%` : `${fmt(cpu[0]! * 100)}%`,
      spread ?? "",
    ]);
  };
  add("single primary", 1, { kind: "single" });
  add(`single primary + ${p.replicas} read replicas (console on replicas)`, 1, { kind: "replicas", replicas: p.replicas });
  for (const n of p.primaries) {
    const seeds = Array.from({ length: p.seeds }, (_, i) => evaluate({ kind: "static", primaries: n, seed: i + 1 }, hw, p.cost, p.mix, p.console).throughput);
    const spread = `${fmt(Math.min(...seeds))} / ${fmt(median(seeds))} / ${fmt(Math.max(...seeds))}`;
    add("sharded by tenant, static hash map", n, { kind: "static", primaries: n, seed: p.seed }, spread);
  }
  for (const n of p.primaries) add("sharded by tenant, hot tenants rebalanced", n, { kind: "rebalanced", primaries: n });
  if (p.splitWhale > 1) {
    const split = splitWhale(p.mix, p.splitWhale);
    for (const n of p.primaries)
      add(`sharded, rebalanced, the whale split into ${p.splitWhale} sub-tenants`, n, { kind: "rebalanced", primaries: n }, undefined, split, p.splitWhale);
  }
  for (const n of p.primaries) add("sharded, rebalanced, + a global queue cap (cross-shard counter)", n, { kind: "global-cap", primaries: n, cap: p.cap });
  return markdownTable(
    ["design", "primaries", "jobs/s", "× single", "saturates first", "CPU use across primaries", `static map over ${p.seeds} seeds: min / median / max jobs/s`],
    rows,
  );
};
