// The model's inputs: per-job costs measured on this machine (measure-costs.ts; docs/scaling.md has
// the runs), and the hardware assumptions for a primary, each with why.
import type { ConsoleLoad, GlobalCap, Hardware, JobCost } from "./model";

/**
 * Measured 2026-12-02 on a private cluster (PostgreSQL 15, stock settings, fsync on), medians of 3
 * rounds of 20k jobs, `npm run costs -w @porter/bench` (claim and ack at the probe's batch sizes
 * and, `-- --claim-batch 50 --ack-batch 50`, at a fleet's). Per job, per phase.
 */
export const MEASURED = {
  /** enqueueJobs on a pool, calls of 1000 (producer.enqueueBatch's path). */
  enqueueBatch: { cpuUs: 45.0, walBytes: 1049, wireBytes: 220 },
  /** One job per call, 32 concurrent callers on one pool of 8 (coalesced: 16 jobs per commit). */
  enqueueSingle: { cpuUs: 177.5, walBytes: 1051, commitsPerJob: 0.0628 },
  /** porter_claim, batches of 400. */
  claim400: { cpuUs: 53.7, walBytes: 833, wireBytes: 357 },
  /** porter_claim, batches of 50. */
  claim: { cpuUs: 78.7, walBytes: 825, wireBytes: 373 },
  /** completeJobs, batches of 500. */
  ack500: { cpuUs: 32.5, walBytes: 814, wireBytes: 44 },
  /** completeJobs, batches of 50. */
  ack: { cpuUs: 50.0, walBytes: 822, wireBytes: 48 },
  /** One lease extension (a job running past lease/3 pays one per lease/3). */
  heartbeat: { cpuUs: 17.9, walBytes: 279, wireBytes: 75 },
  /** Full-page images when the phase follows a checkpoint (`--checkpoint`): claim + ack, per job. */
  fpiAfterCheckpoint: 692,
} as const;

/** Jobs per durable commit in a fleet: smaller than the probe's batches (many workers share the flow). */
export const FLEET_BATCHES = { enqueue: 16, claim: 50, ack: 50 } as const;

/**
 * A job as the model charges it: producers calling one job at a time (the dearer enqueue), the
 * full-page images of a checkpoint counted in (the worse WAL figure), commits from fleet batches.
 */
export const DEFAULT_COST: JobCost = {
  cpuUs: MEASURED.enqueueSingle.cpuUs + MEASURED.claim.cpuUs + MEASURED.ack.cpuUs,
  walBytes: MEASURED.enqueueSingle.walBytes + MEASURED.claim.walBytes + MEASURED.ack.walBytes + MEASURED.fpiAfterCheckpoint,
  commitsPerJob: 1 / FLEET_BATCHES.enqueue + 1 / FLEET_BATCHES.claim + 1 / FLEET_BATCHES.ack,
  // A single enqueue's wire cost is about the batch's per job plus its own envelope; the batch figure stands in.
  wireBytes: MEASURED.enqueueBatch.wireBytes + MEASURED.claim.wireBytes + MEASURED.ack.wireBytes,
};

/** The same job from producers that enqueue in batches of 1000. */
export const BATCH_COST: JobCost = {
  ...DEFAULT_COST,
  cpuUs: MEASURED.enqueueBatch.cpuUs + MEASURED.claim.cpuUs + MEASURED.ack.cpuUs,
  commitsPerJob: 1 / 1000 + 1 / FLEET_BATCHES.claim + 1 / FLEET_BATCHES.ack,
};

/**
 * A primary on a current server with NVMe. Every number is an assumption, stated in
 * docs/scaling.md ("The limits of one primary"), and a flag of `npm run sim` changes it.
 */
export const hardware = (cores: number): Hardware => ({
  cores,
  // Contention on WAL insertion, the hot pages of the claim index and the job table's tail, and the
  // ProcArray: σ 2%, κ 0.01% give 7.0 / 12.1 / 18.6 / 24.0 effective cores at 8 / 16 / 32 / 64.
  usl: { sigma: 0.02, kappa: 0.0001 },
  cpuHeadroom: 0.7,
  coreSpeed: 1,
  // An enterprise NVMe with power-loss protection: fdatasync ≈ 50 µs.
  flushesPerSec: 20_000,
  commitsPerFlush: 1,
  walMBps: 400,
  nicMBps: 1250, // 10 GbE
  replayMBps: 150,
});

/** The console's reads: one core-second per second on a primary holding everything, 30% of it fan-out. */
export const DEFAULT_CONSOLE: ConsoleLoad = { cpuUsPerSec: 1_000_000, fanOutShare: 0.3 };

/**
 * A queue cap held across shards: 20% of the jobs in 4 capped queues. A capped queue's claims are
 * small (a cap of C slots shared by W workers leaves about C/W per claim): 2 jobs per counter update.
 */
export const DEFAULT_GLOBAL_CAP: GlobalCap = {
  cappedShare: 0.2,
  updatesPerJob: 2,
  jobsPerUpdate: 2,
  counterRows: 4,
  // The coordinator's flush (50 µs) plus a round trip from the shard (250 µs) plus the statement.
  rowHoldUs: 400,
};
