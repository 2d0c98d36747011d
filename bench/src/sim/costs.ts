// Types shared by the cost probe (measure-costs.ts) and the model: what one phase of a job cost.

/** Rows a phase wrote to one table (pg_stat_user_tables deltas). */
export type TableRows = { ins: number; upd: number; hot: number; del: number };

/** One phase of the probe: totals over `jobs` jobs. */
export type PhaseCost = {
  phase: "enqueue" | "single" | "claim" | "heartbeat" | "ack";
  jobs: number;
  wallS: number;
  /** pg_current_wal_lsn() delta (a private cluster: Porter's WAL only). */
  walBytes: number;
  /** Full-page images among them (pg_waldump --stats). */
  fpiBytes: number;
  walByRmgr: Record<string, number>;
  commits: number;
  /** CPU seconds of every process of the cluster (backends, WAL writer, checkpointer, autovacuum). */
  pgCpuS: number;
  /** Bytes read and written on the phase's client socket; null when the phase ran on a pool. */
  netBytes: number | null;
  tables: Record<string, TableRows>;
};
