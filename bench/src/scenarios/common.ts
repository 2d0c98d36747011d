import type { PerJob } from "../database";
import type { Progress } from "../progress";
import { openSession } from "../systems";
import type { Session } from "../systems/types";
import type { Budget, Variant, VariantId } from "../variants";
import type { HandlerMode } from "../worker/protocol";
import { spawnWorker, type WorkerHandle } from "../worker/spawn";

/** Sizes of one mode (quick or full). */
export type Sizes = {
  runs: number;
  /** Runs of the peers' default configurations (slow by design; shown for reference). */
  defaultRuns: number;
  /** (a)'s jobs per run at 100 per call. */
  enqueueJobs: number;
  /**
   * (a)'s jobs per run at 1000 per call: more than at 100, so that the phase lasts seconds — at
   * 20k (20 calls, ≈ 0.5 s) one producer's 1000/call rate ranged 29,780–44,487 over three runs.
   */
  enqueueJobsLarge: number;
  singleSeconds: number;
  burnDownJobs: number;
  burnDownCapS: number;
  /** The peers' default configurations run far slower (pg-boss polls every 2 s): their burn-down stops here. */
  defaultCapS: number;
  steadySeconds: number;
  idleSamples: number;
  idleCapS: number;
  backlogSmall: number;
  backlogLarge: number;
  backlogWindow: number;
  /** (f): windows drained per phase, each by a fresh worker, their claims pooled for the percentiles. */
  backlogDrains: number;
  failureJobs: number;
  /** (g) sizes each system's run to about this many seconds at its (c) rate. */
  failureTargetS: number;
  failureCapS: number;
  /** (i) realistic: jobs preloaded for the burn-down, its cap, then arrivals/s for the latency window of this many seconds. */
  realisticJobs: number;
  realisticCapS: number;
  realisticArrivals: number;
  realisticSeconds: number;
};

export type BenchContext = {
  adminUrl: string;
  budget: Budget;
  sizes: Sizes;
  progress: Progress;
  variants: readonly Variant[];
  /** Each variant's burn-down rate (median) once (c) ran: the "own maximum" of (d), and the size of (g). */
  maxRates: Map<VariantId, number>;
};

/** A column of a scenario table: `better` says which way a ratio is good ("none": no ratio). */
export type Column = { key: string; label: string; digits?: number; better: "higher" | "lower" | "none" };

/** A table row: one value per measured run for each column. */
export type Row = { label: string; variant: VariantId; isPorter: boolean; values: Record<string, number[]>; notes: string[] };

export type ScenarioResult = {
  id: string;
  title: string;
  /** What the figures mean, printed under the table. */
  notes: string[];
  /** Printed right under the ratio table: why these ratios are not the ones to quote (quick mode). */
  ratioCaveat?: string;
  /** The Porter row every other Porter row is divided by (default: the first row of variant `porter`). */
  porterBase?: string;
  columns: Column[];
  rows: Row[];
  /** Anything else worth keeping in the JSON (verification counts, settings in effect). */
  details: unknown[];
};

export class RowSet {
  private readonly rows = new Map<string, Row>();

  row(label: string, variant: VariantId): Row {
    let r = this.rows.get(label);
    if (!r) {
      r = { label, variant, isPorter: variant === "porter" || variant === "porter-policy", values: {}, notes: [] };
      this.rows.set(label, r);
    }
    return r;
  }

  /** Records one run's values. */
  add(label: string, variant: VariantId, values: Record<string, number>): void {
    const r = this.row(label, variant);
    for (const [k, v] of Object.entries(values)) {
      r.values[k] ??= [];
      r.values[k].push(v);
    }
  }

  note(label: string, variant: VariantId, note: string): void {
    const r = this.row(label, variant);
    if (!r.notes.includes(note)) r.notes.push(note);
  }

  all(): Row[] {
    return [...this.rows.values()];
  }
}

export const perJobValues = (p: PerJob): Record<string, number> => ({
  commits: p.commits,
  wal: p.walBytes,
  dead: p.deadTuples,
  foreign: p.foreignShare,
});

/** The per-job cost columns every scenario reports. */
export const COST_COLUMNS: Column[] = [
  { key: "commits", label: "commits/job", digits: 2, better: "lower" },
  { key: "wal", label: "WAL B/job", better: "lower" },
  { key: "dead", label: "dead tuples/job", digits: 2, better: "lower" },
];

/** A worker process for `variant`, booted (not started). */
export const bootWorker = (ctx: BenchContext, variant: Variant, handler: HandlerMode): Promise<WorkerHandle> =>
  spawnWorker({ variant: variant.id, budget: ctx.budget, handler, timeClaims: true });

/** A peer in its library-default configuration. */
export const isPeerDefault = (v: Variant): boolean => v.system !== "porter" && !v.tuned;

/** Which measured run this is (from 1). */
export type Run = { index: number };

/**
 * After a generation: VACUUM ANALYZE (the state autovacuum would reach), then CHECKPOINT (the
 * state the checkpointer would reach), so that no drain pays for them at a moment of their choosing.
 * (f): generating 1M rows writes over a gigabyte of WAL in seconds, which starts a checkpoint that
 * ran through the 1M phase's drains and in none of the 10k phase's: its writes and syncs set that
 * phase's p99 (1.80×, 2.73× and 3.27× of 10k in three runs, against 1.12×, 1.25× and 1.45× with both
 * phases starting after a checkpoint; docs/performance.md "claim at depth"). (c) and (g): a backlog
 * drained before any ANALYZE is planned as the empty table its statistics describe —
 * graphile-worker tuned's claim then cost twice its PostgreSQL CPU (quick (c): 17,969 jobs/s
 * unanalyzed, 29,413 after ANALYZE alone; Porter's claim 26.8k and 26.4k), and autovacuum's own
 * ANALYZE came in some drains and not others. A drain still pays the full-page images of the first
 * change to each page after the checkpoint.
 */
export const settle = async (session: Session): Promise<void> => {
  await session.observer.query("VACUUM ANALYZE");
  await session.observer.query("CHECKPOINT");
};

/**
 * Runs `measure` for every variant, run after run, in an order rotated each run so no system
 * always goes first. Each call gets its own fresh database and, with `worker`, a worker process
 * booted meanwhile (started by `measure`, ended afterwards). The warm-up is one pass for the whole
 * bench (burn-down.ts `warmUp`), before the first scenario.
 */
export const interleave = async (
  ctx: BenchContext,
  variants: readonly Variant[],
  options: { runs: number; worker?: HandlerMode | ((variant: Variant) => HandlerMode) },
  measure: (session: Session, run: Run, worker: WorkerHandle) => Promise<void>,
): Promise<void> => {
  for (let index = 1; index <= options.runs; index++) {
    const shift = index % variants.length;
    const order = [...variants.slice(shift), ...variants.slice(0, shift)];
    for (const variant of order) {
      if (isPeerDefault(variant) && index > ctx.sizes.defaultRuns) continue;
      const [session, worker] = await Promise.allSettled([
        openSession(ctx.adminUrl, variant, ctx.budget),
        options.worker ? bootWorker(ctx, variant, typeof options.worker === "function" ? options.worker(variant) : options.worker) : Promise.resolve(undefined),
      ]);
      try {
        if (session.status === "rejected") throw session.reason;
        if (worker.status === "rejected") throw worker.reason;
        await measure(session.value, { index }, worker.value as WorkerHandle);
      } finally {
        if (worker.status === "fulfilled") worker.value?.kill();
        if (session.status === "fulfilled") await session.value.close();
      }
    }
  }
};

export const runLabel = (run: Run, runs: number): string => `run ${run.index}/${runs}`;

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
