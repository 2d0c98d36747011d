import { describe, expect, it } from "vitest";
import { DEFAULT_CONSOLE, DEFAULT_COST, DEFAULT_GLOBAL_CAP, hardware } from "./defaults";
import {
  type ConsoleLoad,
  constraintsOf,
  type Design,
  effectiveCores,
  evaluate,
  type Hardware,
  hashShard,
  type JobCost,
  rebalancedPlacement,
  sharesOf,
  staticPlacement,
  tenantMix,
} from "./model";
import { designsTable, limitsTable, type SimParams, splitWhale } from "./report";

// A seeded generator for the property checks (mulberry32): the same cases every run.
const rng = (seed: number) => () => {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};
const between = (r: () => number, lo: number, hi: number) => lo + (hi - lo) * r();

const noConsole: ConsoleLoad = { cpuUsPerSec: 0, fanOutShare: 0 };
const hw16 = hardware(16);
const uniform = (n: number) => Array.from({ length: n }, () => 1 / n);

const randomCase = (r: () => number) => {
  const hw: Hardware = {
    cores: Math.ceil(between(r, 1, 96)),
    usl: { sigma: between(r, 0, 0.1), kappa: between(r, 0, 0.001) },
    cpuHeadroom: between(r, 0.3, 1),
    coreSpeed: between(r, 0.5, 2),
    flushesPerSec: between(r, 1000, 50_000),
    commitsPerFlush: between(r, 1, 8),
    walMBps: between(r, 50, 1000),
    nicMBps: between(r, 100, 5000),
    replayMBps: between(r, 20, 500),
  };
  const cost: JobCost = { cpuUs: between(r, 20, 800), walBytes: between(r, 500, 8000), commitsPerJob: between(r, 0.001, 3), wireBytes: between(r, 100, 4000) };
  const mix = tenantMix(Math.ceil(between(r, 1, 300)), between(r, 0, 0.6), between(r, 0, 2));
  const console: ConsoleLoad = { cpuUsPerSec: between(r, 0, 2e6), fanOutShare: r() };
  const n = Math.ceil(between(r, 1, 16));
  const designs: Design[] = [
    { kind: "single" },
    { kind: "replicas", replicas: Math.floor(between(r, 0, 4)) },
    { kind: "static", primaries: n, seed: Math.floor(between(r, 0, 1000)) },
    { kind: "rebalanced", primaries: n },
    { kind: "global-cap", primaries: n, cap: { ...DEFAULT_GLOBAL_CAP, cappedShare: r(), jobsPerUpdate: between(r, 1, 50) } },
  ];
  return { hw, cost, mix, console, designs };
};

describe("effectiveCores (Universal Scalability Law)", () => {
  it("is linear without contention or coherency, and sub-linear with them", () => {
    for (const n of [1, 8, 16, 32, 64]) expect(effectiveCores(n, { sigma: 0, kappa: 0 })).toBe(n);
    const usl = hw16.usl;
    expect(effectiveCores(1, usl)).toBe(1);
    let last = 0;
    for (const n of [2, 8, 16, 32, 64]) {
      const e = effectiveCores(n, usl);
      expect(e).toBeLessThan(n);
      expect(e).toBeGreaterThan(last); // still rising up to 64 cores with the defaults
      last = e;
    }
  });
});

describe("tenantMix", () => {
  it("sums to 1, the whale first, the rest falling", () => {
    const mix = tenantMix(1000, 0.15, 0.8);
    expect(mix.reduce((a, b) => a + b, 0)).toBeCloseTo(1, 12);
    expect(mix[0]).toBe(0.15);
    for (let i = 2; i < mix.length; i++) expect(mix[i]!).toBeLessThanOrEqual(mix[i - 1]!);
    expect(tenantMix(1, 0.5, 1)).toEqual([1]);
  });
});

describe("placements", () => {
  it("the static map is deterministic, spreads tenants, and depends on the seed", () => {
    const mix = uniform(10_000);
    const a = staticPlacement(mix, 4, 7);
    expect(staticPlacement(mix, 4, 7)).toEqual(a);
    for (const share of sharesOf(mix, a, 4)) expect(share).toBeGreaterThan(0.22);
    for (const shards of [2, 4, 16]) {
      const moved = mix.filter((_, t) => hashShard(t, shards, 1) !== hashShard(t, shards, 2)).length;
      expect(moved / mix.length).toBeGreaterThan(0.3);
    }
  });

  it("rebalancing keeps the hottest shard within the list-scheduling bound: 1/N + the largest tenant", () => {
    const r = rng(11);
    for (let i = 0; i < 200; i++) {
      const mix = tenantMix(Math.ceil(between(r, 1, 500)), between(r, 0, 0.5), between(r, 0, 2));
      const n = Math.ceil(between(r, 1, 16));
      const shares = sharesOf(mix, rebalancedPlacement(mix, n), n);
      expect(shares.reduce((a, b) => a + b, 0)).toBeCloseTo(1, 9);
      expect(Math.max(...shares)).toBeLessThanOrEqual(1 / n + Math.max(...mix) + 1e-12);
      expect(Math.max(...shares)).toBeGreaterThanOrEqual(Math.max(Math.max(...mix), 1 / n) - 1e-12);
    }
  });
});

describe("evaluate", () => {
  it("never exceeds any resource's ceiling, and meets the tightest one exactly", () => {
    const r = rng(2026);
    for (let i = 0; i < 300; i++) {
      const { hw, cost, mix, console, designs } = randomCase(r);
      for (const design of designs) {
        const { constraints } = constraintsOf(design, hw, cost, mix, console);
        const o = evaluate(design, hw, cost, mix, console);
        const ceilings = constraints.filter((c) => c.perJob > 0).map((c) => Math.max(0, (c.capacity - c.fixed) / c.perJob));
        expect(o.throughput).toBeLessThanOrEqual(Math.min(...ceilings) * (1 + 1e-12));
        expect(o.throughput).toBeCloseTo(Math.min(...ceilings), 6);
        // What the jobs use of each resource fits in what the fixed load (the console) leaves.
        for (const c of constraints) expect(c.perJob * o.throughput).toBeLessThanOrEqual(Math.max(0, c.capacity - c.fixed) * (1 + 1e-9) + 1e-9);
        const b = o.bottleneck;
        expect(b.perJob * o.throughput).toBeCloseTo(Math.max(0, b.capacity - b.fixed), 3);
      }
    }
  });

  it("N identical shards of uniform tenants scale linearly", () => {
    const mix = uniform(64);
    const one = evaluate({ kind: "rebalanced", primaries: 1 }, hw16, DEFAULT_COST, mix, noConsole).throughput;
    for (const n of [1, 2, 4, 8, 16]) {
      const o = evaluate({ kind: "rebalanced", primaries: n }, hw16, DEFAULT_COST, mix, noConsole);
      expect(o.throughput / one).toBeCloseTo(n, 9);
      for (const u of o.cpuUtilisation) expect(u).toBeCloseTo(1, 9);
    }
  });

  it("under a static map the whale's shard saturates first", () => {
    const mix = tenantMix(500, 0.3, 0);
    for (let seed = 1; seed <= 20; seed++) {
      for (const n of [2, 4, 8, 16]) {
        const design: Design = { kind: "static", primaries: n, seed };
        const o = evaluate(design, hw16, DEFAULT_COST, mix, DEFAULT_CONSOLE);
        expect(o.bottleneck.shard).toBe(staticPlacement(mix, n, seed)[0]);
      }
    }
  });

  it("no sharding passes the whale: one primary's ceiling ÷ the whale's share", () => {
    const mix = tenantMix(1000, 0.15, 0.8);
    const whaleAlone = evaluate({ kind: "single" }, hw16, DEFAULT_COST, [1], noConsole).throughput / 0.15;
    for (const n of [1, 2, 4, 8, 16, 64]) {
      for (const design of [
        { kind: "rebalanced", primaries: n },
        { kind: "static", primaries: n, seed: 3 },
      ] as Design[]) {
        expect(evaluate(design, hw16, DEFAULT_COST, mix, noConsole).throughput).toBeLessThanOrEqual(whaleAlone * (1 + 1e-12));
      }
    }
    // With enough primaries the whale is alone on one and is exactly the limit.
    expect(evaluate({ kind: "rebalanced", primaries: 16 }, hw16, DEFAULT_COST, mix, noConsole).throughput).toBeCloseTo(whaleAlone, 6);
  });

  it("splitting the whale into k sub-tenants lifts its limit up to k-fold, never past the new largest share", () => {
    const mix = tenantMix(1000, 0.15, 0.8);
    const one = evaluate({ kind: "single" }, hw16, DEFAULT_COST, [1], noConsole).throughput;
    const whole = evaluate({ kind: "rebalanced", primaries: 16 }, hw16, DEFAULT_COST, mix, noConsole).throughput;
    const split = splitWhale(mix, 4);
    expect(split.reduce((a, b) => a + b, 0)).toBeCloseTo(1, 12);
    const parted = evaluate({ kind: "rebalanced", primaries: 16 }, hw16, DEFAULT_COST, split, noConsole).throughput;
    expect(parted).toBeGreaterThan(whole);
    expect(parted).toBeLessThanOrEqual(Math.min(4 * whole, one / Math.max(...split)) * (1 + 1e-12));
  });

  it("a cross-shard cap counter flattens the fleet: no more primaries raise it past the counter's ceiling", () => {
    const mix = tenantMix(1000, 0.05, 0.8);
    const cap = DEFAULT_GLOBAL_CAP;
    const counterCeiling = (cap.counterRows * (1e6 / cap.rowHoldUs) * cap.jobsPerUpdate) / (cap.cappedShare * cap.updatesPerJob);
    const one = evaluate({ kind: "global-cap", primaries: 1, cap }, hw16, DEFAULT_COST, mix, DEFAULT_CONSOLE);
    expect(one.throughput).toBe(evaluate({ kind: "rebalanced", primaries: 1 }, hw16, DEFAULT_COST, mix, DEFAULT_CONSOLE).throughput);
    for (const n of [2, 4, 8, 16]) {
      const o = evaluate({ kind: "global-cap", primaries: n, cap }, hw16, DEFAULT_COST, mix, DEFAULT_CONSOLE);
      const free = evaluate({ kind: "rebalanced", primaries: n }, hw16, DEFAULT_COST, mix, DEFAULT_CONSOLE);
      expect(o.throughput).toBeLessThanOrEqual(counterCeiling * (1 + 1e-12));
      expect(o.throughput).toBeCloseTo(Math.min(counterCeiling, free.throughput), 6);
    }
    expect(evaluate({ kind: "global-cap", primaries: 16, cap }, hw16, DEFAULT_COST, mix, DEFAULT_CONSOLE).bottleneck.resource).toBe("counter");
  });

  it("replicas take the console off the primary, and cap it at their replay speed", () => {
    const mix = [1];
    const single = evaluate({ kind: "single" }, hw16, DEFAULT_COST, mix, DEFAULT_CONSOLE).throughput;
    const replicas = evaluate({ kind: "replicas", replicas: 2 }, hw16, DEFAULT_COST, mix, DEFAULT_CONSOLE);
    expect(replicas.throughput).toBeGreaterThan(single);
    const slowReplay = { ...hw16, replayMBps: 20 };
    const capped = evaluate({ kind: "replicas", replicas: 2 }, slowReplay, DEFAULT_COST, mix, DEFAULT_CONSOLE);
    expect(capped.bottleneck.resource).toBe("replay");
    expect(capped.throughput).toBeCloseTo(20e6 / DEFAULT_COST.walBytes, 6);
  });
});

describe("report", () => {
  const params: SimParams = {
    cost: DEFAULT_COST,
    batchCost: DEFAULT_COST,
    hardware,
    console: DEFAULT_CONSOLE,
    cap: DEFAULT_GLOBAL_CAP,
    mix: tenantMix(100, 0.2, 0.8),
    coresPerPrimary: 16,
    primaries: [1, 2, 4],
    replicas: 2,
    seed: 1,
    seeds: 5,
    splitWhale: 1,
  };
  it("prints the same tables for the same parameters, one row per design and primary count", () => {
    const a = designsTable(params);
    expect(designsTable(params)).toBe(a);
    expect(a.split("\n")).toHaveLength(2 + 2 + 3 * 3);
    expect(designsTable({ ...params, splitWhale: 4 }).split("\n")).toHaveLength(2 + 2 + 4 * 3);
    expect(limitsTable(params, [8, 64]).split("\n")).toHaveLength(2 + 4);
  });
});
