import pg from "pg";
import type { Variant } from "../variants";

/** A bench job: its number, and for latency scenarios when it was enqueued (epoch ms). */
export type BenchJob = { k: number; t?: number };

/** Producer calls over Porter's HTTP API. */
export type HttpProducer = {
  enqueueOne: (job: BenchJob) => Promise<string>;
  enqueueBatch: (jobs: BenchJob[]) => Promise<string[]>;
  /** CPU (user + system, ms) the server process has used so far: the producer's CPU split in (a). */
  serverCpuMs: () => number;
  close: () => Promise<void>;
};

/**
 * One system on its own fresh database, seen from the producer side. Enqueues use the system's
 * public producer API; the observer pool (2 connections, outside the budget) reads stats and state.
 */
export type Session = {
  variant: Variant;
  url: string;
  observer: pg.Pool;
  /** The producer's batch call; returns each job's id, in input order. */
  enqueueBatch: (jobs: BenchJob[]) => Promise<string[]>;
  /** The producer's single-job call; returns the job's id. */
  enqueueOne: (job: BenchJob) => Promise<string>;
  /** Jobs not yet done (ready, retrying or running). */
  pending: () => Promise<number>;
  /** The ids among `ids` whose jobs are done (succeeded and acknowledged). */
  doneAmong: (ids: string[]) => Promise<Set<string>>;
  /** Succeeded jobs the system still holds, or null when it deletes them on completion. */
  succeededInDb: () => Promise<number | null>;
  /**
   * Appends rows straight into the system's own tables, in its own format (cloned from a job it
   * stored itself): `ready` claimable jobs or `finished` (succeeded) ones, numbered from `from`.
   * Returns false when the system keeps no finished rows.
   */
  generate: (kind: "ready" | "finished", from: number, count: number) => Promise<boolean>;
  /** Porter only: a producer over the HTTP API, served by a process of its own. */
  http?: () => Promise<HttpProducer>;
  /**
   * graphile-worker only: its batch call with a `jobKey` per job (the key Porter's producers send
   * as `idempotency_key`), so that (a) also shows both systems giving the same deduplication. A
   * row beside the plain one; the target names the plain one.
   */
  keyedBatch?: (jobs: BenchJob[]) => Promise<string[]>;
  /**
   * Empties the tables an enqueue writes (jobs, and for Porter its idempotency ledger and status
   * stream), so that each producer of a session — Porter's direct and HTTP calls, graphile-worker's
   * plain and keyed ones — starts from the state the first one had (a fresh database), not from
   * the rows of the producers before it.
   */
  reset?: () => Promise<void>;
  /** Ends the pools and drops the database. */
  close: () => Promise<void>;
};

/** The effect table every system's faulty-mode handler writes (see worker/job-log.ts). */
export const EFFECTS_TABLE_SQL = `CREATE TABLE bench_effects (k integer PRIMARY KEY, applied integer NOT NULL)`;

/** How the effects came out: jobs applied at least once, and jobs applied more than once. */
export const readEffects = async (observer: pg.Pool): Promise<{ applied: number; duplicated: number; total: number }> => {
  const { rows } = await observer.query<{ applied: number; duplicated: number; total: number }>(
    `SELECT count(*)::int AS applied, count(*) FILTER (WHERE applied > 1)::int AS duplicated, coalesce(sum(applied), 0)::int AS total
       FROM bench_effects`,
  );
  return rows[0]!;
};

/** The observer pool of a session: 2 connections outside the budget, for statistics and probes. */
export const observerPool = (url: string): pg.Pool => {
  const pool = new pg.Pool({ connectionString: url, max: 2, application_name: "bench-observer" });
  // A connection cut while idle (the database being dropped) must not crash the bench.
  pool.on("error", () => undefined);
  return pool;
};
