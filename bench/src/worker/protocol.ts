import type { Budget, VariantId } from "../variants";

// The bench's one clock: epoch milliseconds with sub-millisecond resolution, the same in every
// process of a run. Node's `performance.timeOrigin + performance.now()` is the monotonic clock plus
// the wall time the process read when it started; when the wall clock is stepped (this machine's
// is, by whole seconds), processes started before and after the step disagree by the step. Stamps
// of a worker child (a job's start) compared with the parent's (the end of a burn-down, a job's
// enqueue) were then off by seconds: burn-down rates came out several times too high in one full
// run, and at other times too low (docs/performance.md, "the bench's clocks"). So each worker
// child takes its parent's anchor — the wall time at the monotonic clock's zero — and the monotonic
// clock, shared by every process, does the rest.
const monotonicMs = (): number => Number(process.hrtime.bigint()) / 1e6;
/** This process's own anchor, as Node's performance clock has it. */
const ownAnchor = performance.timeOrigin + performance.now() - monotonicMs();
let delta = 0;

/** Milliseconds on the bench's clock (see above). */
export const nowMs = (): number => performance.timeOrigin + performance.now() + delta;

/** The anchor of this process's clock: a parent gives it to the worker children it forks. */
export const clockAnchor = (): number => ownAnchor + delta;

/** Puts this process on the clock of `anchor` (a worker child, on its parent's). */
export const useClockAnchor = (anchor: number): void => {
  delta = anchor - ownAnchor;
};

/** What a job carries: its bench-wide number and, for latency scenarios, when it was enqueued. */
export type BenchPayload = { k: number; t?: number };

/** How the worker's handler behaves. */
export type HandlerMode =
  | { kind: "noop" }
  /** `failPercent`% of jobs (the same ones for every system) fail their first attempt before any effect; a success applies one effect. */
  | { kind: "faulty"; failPercent: number; effect: EffectMode }
  /** Scenario (i): the realistic mix (realistic-mix.ts) — several queues, three tenants, job k sleeps durationOf(k). */
  | { kind: "realistic" };

export type WorkerConfig = {
  variant: VariantId;
  budget: Budget;
  handler: HandlerMode;
  /** Time claim statements (pg query round trip, whole transaction for multi-statement claims). */
  timeClaims: boolean;
};

export type Progress = { executed: number; succeeded: number; failed: number; firstStartAt: number; lastEndAt: number };

export type Distribution = { count: number; p50: number; p99: number; max: number; mean: number };

/** `samples`: each claim's latency, ms (to pool several workers' claims). */
export type ClaimStats = { claims: number; rows: number; latency: Distribution; samples: number[] };

export type WorkerSummary = Progress & {
  claims: ClaimStats;
  /** Jobs whose handler succeeded more than once (redelivered after success). */
  repeatedSuccesses: number;
  /** Distinct jobs that succeeded at least once. */
  distinctSucceeded: number;
  /** CPU time of the worker process (user + system) from start to stop, ms. */
  cpuMs: number;
  /** The settings the worker reported in effect. */
  info: Record<string, unknown>;
};

/** Parent → worker process. */
export type ToWorker =
  | { type: "start"; url: string }
  | { type: "latency"; id: number; from: number; to: number }
  | { type: "claims"; id: number; skip: number }
  | { type: "stop" };

/** Worker process → parent. */
export type FromWorker =
  | { type: "booted" }
  | { type: "started"; at: number; info: Record<string, unknown> }
  | { type: "progress"; progress: Progress }
  | { type: "latency"; id: number; latency: Distribution }
  | { type: "claims"; id: number; claims: ClaimStats }
  | { type: "stopped"; summary: WorkerSummary }
  | { type: "error"; message: string };

/** Percentiles by nearest rank over a copy of the values. */
export const distribution = (values: ArrayLike<number>): Distribution => {
  const sorted = Float64Array.from(values).sort();
  const n = sorted.length;
  if (n === 0) return { count: 0, p50: NaN, p99: NaN, max: NaN, mean: NaN };
  const at = (q: number) => sorted[Math.min(n - 1, Math.max(0, Math.ceil(q * n) - 1))]!;
  let sum = 0;
  for (const v of sorted) sum += v;
  return { count: n, p50: at(0.5), p99: at(0.99), max: sorted[n - 1]!, mean: sum / n };
};

/** How bench (g)'s handler applies its effect: Porter's ledger (a function by default or txOnly, or one statement) or a plain write. */
export type EffectMode = "ledger" | "ledger-tx-only" | "ledger-statement" | "plain";
