// The capacity model behind docs/scaling.md: how many jobs per second a set of PostgreSQL primaries
// sustains for a tenant mix, under each design, and which resource of which primary gives out first.
// Pure functions, no I/O: main.ts prints the tables, model.test.ts checks the model's claims.
//
// A design is a list of constraints of the form `fixed + perJob × X ≤ capacity` (X the fleet's
// throughput in jobs/s, with every tenant's share of it held fixed); the sustained throughput is the
// largest X meeting all of them, and the binding constraint is where the design saturates.

/** What one job costs a primary (enqueue + claim + ack; measured by measure-costs.ts). */
export type JobCost = {
  /** PostgreSQL CPU per job, µs of one core of the measuring machine. */
  cpuUs: number;
  /** WAL bytes per job, full-page images included. */
  walBytes: number;
  /** Synchronously flushed commits per job (each waits for a WAL flush). */
  commitsPerJob: number;
  /** Bytes between clients and the primary per job (both directions). */
  wireBytes: number;
};

/** One primary's hardware, and the assumptions that turn it into ceilings. */
export type Hardware = {
  cores: number;
  /** Universal Scalability Law coefficients: contention (sigma) and coherency (kappa). */
  usl: { sigma: number; kappa: number };
  /** Share of the effective CPU the queue may use (the rest: vacuum, checkpoints, spikes). */
  cpuHeadroom: number;
  /** A core's speed relative to the measuring machine's. */
  coreSpeed: number;
  /** WAL flushes per second the WAL device sustains (1 / fdatasync latency). */
  flushesPerSec: number;
  /** Commits one flush carries (group commit); 1 = no credit taken. */
  commitsPerFlush: number;
  /** WAL a primary writes per second at most, MB/s (insertion and write, not the disk's raw speed). */
  walMBps: number;
  /** Network bandwidth, MB/s. */
  nicMBps: number;
  /** WAL one replica replays per second (one startup process), MB/s. */
  replayMBps: number;
};

/** The console's reads: a fixed load, wherever it lands. */
export type ConsoleLoad = {
  /** PostgreSQL CPU the console's reads cost on one primary holding every tenant, µs per second. */
  cpuUsPerSec: number;
  /** Share of that load in reads across tenants (overview, job lists): every shard answers them in full. */
  fanOutShare: number;
};

/** A cross-shard counter (a queue cap held across shards) on one coordinator row per capped queue. */
export type GlobalCap = {
  /** Share of all jobs in globally capped queues. */
  cappedShare: number;
  /** Counter updates per capped job: one at the claim, one at the finish. */
  updatesPerJob: number;
  /** Jobs one counter update covers (the claim or ack batch). */
  jobsPerUpdate: number;
  /** Capped queues, one counter row each (updates of one row serialize). */
  counterRows: number;
  /** Time a counter row stays locked per update: the coordinator's flush plus a network round trip, µs. */
  rowHoldUs: number;
};

export type Design =
  | { kind: "single" }
  | { kind: "replicas"; replicas: number }
  | { kind: "static"; primaries: number; seed: number }
  | { kind: "rebalanced"; primaries: number }
  | { kind: "global-cap"; primaries: number; cap: GlobalCap };

export type Resource = "cpu" | "commits" | "wal" | "network" | "replay" | "counter";

/** One constraint: fixed + perJob × X ≤ capacity, on a primary (or a replica, or the coordinator). */
export type Constraint = { where: string; shard: number | null; resource: Resource; capacity: number; fixed: number; perJob: number };

export type Outcome = {
  /** Jobs/s the design sustains with every tenant's share held. */
  throughput: number;
  /** The constraint that binds first. */
  bottleneck: Constraint;
  /** Tenants' shares of each primary (index = shard). */
  shardShares: number[];
  /** Each primary's CPU utilisation at `throughput`, of its usable CPU. */
  cpuUtilisation: number[];
};

/** Effective cores under the Universal Scalability Law: n / (1 + σ(n−1) + κn(n−1)). */
export const effectiveCores = (n: number, usl: { sigma: number; kappa: number }): number => n / (1 + usl.sigma * (n - 1) + usl.kappa * n * (n - 1));

/**
 * A tenant mix: one whale with `whaleShare` of all jobs, the rest Zipf(s) over the other tenants.
 * Shares sum to 1; index 0 is the whale.
 */
export const tenantMix = (tenants: number, whaleShare: number, zipfS: number): number[] => {
  if (tenants < 1) throw new Error("at least one tenant");
  if (tenants === 1) return [1];
  const weights = Array.from({ length: tenants - 1 }, (_, i) => 1 / (i + 1) ** zipfS);
  const sum = weights.reduce((a, b) => a + b, 0);
  return [whaleShare, ...weights.map((w) => ((1 - whaleShare) * w) / sum)];
};

/**
 * A static, stable tenant → shard map: FNV-1a of the seed and the tenant's index, finished with
 * murmur3's fmix32 (FNV's low bits alone barely depend on the input: mod 2 it is a parity), mod N.
 */
export const hashShard = (tenant: number, shards: number, seed: number): number => {
  let h = 0x811c9dc5;
  for (const ch of `${seed}:tenant-${tenant}`) {
    h ^= ch.charCodeAt(0);
    h = Math.imul(h, 0x01000193);
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return (h >>> 0) % shards;
};

/** Where each tenant lives under a static hash map (index = tenant). */
export const staticPlacement = (mix: number[], shards: number, seed: number): number[] => mix.map((_, t) => hashShard(t, shards, seed));

/**
 * Where each tenant lives after rebalancing: tenants placed largest first on the least loaded
 * shard (LPT; the hottest shard is within 4/3 of the best possible, and never below the largest
 * tenant's share).
 */
export const rebalancedPlacement = (mix: number[], shards: number): number[] => {
  const loads = new Array<number>(shards).fill(0);
  const placement = new Array<number>(mix.length).fill(0);
  const order = mix.map((p, t) => ({ p, t })).sort((a, b) => b.p - a.p || a.t - b.t);
  for (const { p, t } of order) {
    let least = 0;
    for (let s = 1; s < shards; s++) if (loads[s]! < loads[least]!) least = s;
    loads[least]! += p;
    placement[t] = least;
  }
  return placement;
};

/** Each shard's share of the jobs under a placement. */
export const sharesOf = (mix: number[], placement: number[], shards: number): number[] => {
  const shares = new Array<number>(shards).fill(0);
  mix.forEach((p, t) => {
    shares[placement[t]!]! += p;
  });
  return shares;
};

/** A sharded design's placement (tenant → shard); every tenant on shard 0 otherwise. */
export const placementOf = (design: Design, mix: number[]): number[] => {
  if (design.kind === "static") return staticPlacement(mix, design.primaries, design.seed);
  if (design.kind === "rebalanced" || design.kind === "global-cap") return rebalancedPlacement(mix, design.primaries);
  return mix.map(() => 0);
};

/** CPU µs per second a primary offers the queue. */
export const cpuCapacity = (hw: Hardware): number => effectiveCores(hw.cores, hw.usl) * hw.cpuHeadroom * hw.coreSpeed * 1e6;

/** The constraints of one primary holding `share` of the jobs and `consoleUs` of console reads per second. */
const primaryConstraints = (hw: Hardware, cost: JobCost, shard: number, share: number, consoleUs: number, walStreams: number): Constraint[] => {
  const where = `primary ${shard + 1}`;
  return [
    { where, shard, resource: "cpu", capacity: cpuCapacity(hw), fixed: consoleUs, perJob: share * cost.cpuUs },
    { where, shard, resource: "commits", capacity: hw.flushesPerSec * hw.commitsPerFlush, fixed: 0, perJob: share * cost.commitsPerJob },
    { where, shard, resource: "wal", capacity: hw.walMBps * 1e6, fixed: 0, perJob: share * cost.walBytes },
    // Clients' traffic plus one WAL stream per replica.
    { where, shard, resource: "network", capacity: hw.nicMBps * 1e6, fixed: 0, perJob: share * (cost.wireBytes + walStreams * cost.walBytes) },
  ];
};

/** Every constraint of a design. */
export const constraintsOf = (
  design: Design,
  hw: Hardware,
  cost: JobCost,
  mix: number[],
  console: ConsoleLoad,
): { constraints: Constraint[]; shares: number[] } => {
  switch (design.kind) {
    case "single":
      return { constraints: primaryConstraints(hw, cost, 0, 1, console.cpuUsPerSec, 0), shares: [1] };
    case "replicas": {
      // The console reads from the replicas; the primary ships its WAL to each, and each must replay it.
      const constraints = primaryConstraints(hw, cost, 0, 1, 0, design.replicas);
      if (design.replicas > 0)
        constraints.push({ where: "each replica", shard: null, resource: "replay", capacity: hw.replayMBps * 1e6, fixed: 0, perJob: cost.walBytes });
      return { constraints, shares: [1] };
    }
    case "static":
    case "rebalanced":
    case "global-cap": {
      const shares = sharesOf(mix, placementOf(design, mix), design.primaries);
      const consoleOn = (share: number) => console.cpuUsPerSec * (console.fanOutShare + (1 - console.fanOutShare) * share);
      const constraints = shares.flatMap((share, s) => primaryConstraints(hw, cost, s, share, consoleOn(share), 0));
      // One primary holds a cap in its own claim statement: the counter is only needed across primaries.
      if (design.kind === "global-cap" && design.primaries > 1) {
        const c = design.cap;
        constraints.push({
          where: "coordinator",
          shard: null,
          resource: "counter",
          capacity: c.counterRows * (1e6 / c.rowHoldUs),
          fixed: 0,
          perJob: (c.cappedShare * c.updatesPerJob) / c.jobsPerUpdate,
        });
      }
      return { constraints, shares };
    }
  }
};

/** The largest throughput meeting every constraint, and the one that binds first. */
export const solve = (constraints: Constraint[]): { throughput: number; bottleneck: Constraint } => {
  let best: { throughput: number; bottleneck: Constraint } | undefined;
  for (const c of constraints) {
    if (c.perJob <= 0) continue;
    const x = Math.max(0, (c.capacity - c.fixed) / c.perJob);
    if (!best || x < best.throughput) best = { throughput: x, bottleneck: c };
  }
  if (!best) throw new Error("no constraint grows with throughput");
  return best;
};

/** A design's sustained throughput, where it saturates, and each primary's CPU use there. */
export const evaluate = (design: Design, hw: Hardware, cost: JobCost, mix: number[], console: ConsoleLoad): Outcome => {
  const { constraints, shares } = constraintsOf(design, hw, cost, mix, console);
  const { throughput, bottleneck } = solve(constraints);
  const cpuUtilisation = constraints.filter((c) => c.resource === "cpu").map((c) => (c.fixed + c.perJob * throughput) / c.capacity);
  return { throughput, bottleneck, shardShares: shares, cpuUtilisation };
};
