/** The three systems under test. */
export type SystemName = "porter" | "graphile" | "pgboss";

/** One system in one configuration: peers run both with their defaults and tuned per their docs. */
export type VariantId = "porter" | "porter-policy" | "graphile-default" | "graphile-tuned" | "pgboss-default" | "pgboss-tuned";

export type Variant = {
  id: VariantId;
  system: SystemName;
  label: string;
  tuned: boolean;
  /** What is set beyond the shared budget, for the report. */
  settings: string;
  /**
   * Variants with the same key enqueue identically (the tuning is worker-side only), so the
   * enqueue scenarios measure one of them for both.
   */
  enqueueKey: string;
};

/**
 * What every variant gets alike: worker slots (jobs run at once) and the PostgreSQL connections of
 * each process (the worker process's pool, and the producer's pool). graphile-worker's docs ask for
 * `maxPoolSize` ≥ concurrentJobs + 2, so the default budget is concurrency + 2 for everyone.
 */
export type Budget = { concurrency: number; connections: number };

export const VARIANTS: readonly Variant[] = [
  {
    id: "porter",
    system: "porter",
    label: "porter",
    tuned: false,
    settings:
      "PorterWorker defaults: batched claims of free slots + adaptive prefetch (50 ms of work at the measured start rate, ≤ 1000), batched acks, LISTEN, maintenance on",
    enqueueKey: "porter",
  },
  {
    // Burn-down (c) only: Porter's claim on its policy path (docs/scheduling.md), against its
    // uncapped single-tenant figure above and the peers.
    id: "porter-policy",
    system: "porter",
    label: "porter (policy: capped queue in pool, 3 weighted tenants)",
    tuned: false,
    settings:
      "as porter, in a pool that also holds a queue capped at 4 (empty: every claim of the pool is under a queue cap), the jobs spread over tenants tenant_A/B/C weighted 1/1/2; burn-down (c) only",
    enqueueKey: "porter-policy",
  },
  {
    id: "graphile-default",
    system: "graphile",
    label: "graphile-worker default",
    tuned: false,
    settings: "library defaults: no localQueue, completeJobBatchDelay -1, pollInterval 2000",
    enqueueKey: "graphile",
  },
  {
    id: "graphile-tuned",
    system: "graphile",
    label: "graphile-worker tuned",
    tuned: true,
    settings: "localQueue.size 500, completeJobBatchDelay 0, failJobBatchDelay 0 (docs: performance#batching)",
    enqueueKey: "graphile",
  },
  {
    id: "pgboss-default",
    system: "pgboss",
    label: "pg-boss default",
    tuned: false,
    settings: "library defaults: batchSize 1, pollingIntervalSeconds 2, no LISTEN/NOTIFY; localConcurrency = concurrency",
    enqueueKey: "pgboss-default",
  },
  {
    id: "pgboss-tuned",
    system: "pgboss",
    label: "pg-boss tuned",
    tuned: true,
    settings:
      "useListenNotify + queue notify, batchSize 500, localConcurrency 4 (each batch run with concurrency/4 at once), polling 0.5 s (pollingIntervalSeconds and, as NOTIFY is on, notifyPollingIntervalSeconds: retries are found by polling), burstWhenBatchFull, perJobResults",
    enqueueKey: "pgboss-tuned",
  },
];

export const variantById = (id: VariantId): Variant => {
  const v = VARIANTS.find((x) => x.id === id);
  if (!v) throw new Error(`unknown variant ${id}`);
  return v;
};

/** The tuned knobs, shared by the worker process and the report. */
export const TUNED = {
  graphile: { localQueueSize: 500, completeJobBatchDelay: 0, failJobBatchDelay: 0 },
  pgboss: { batchSize: 500, localConcurrency: 4, pollingIntervalSeconds: 0.5, notifyPollingIntervalSeconds: 0.5, burstWhenBatchFull: true },
} as const;

/** Variants measured in burn-down (c) only. */
export const isBurnDownOnly = (v: Variant): boolean => v.id === "porter-policy";

/** The policy variant's tenants (porter-policy): the demo's, with their weights. */
export const POLICY_TENANTS = [
  { id: "tenant_A", weight: 1 },
  { id: "tenant_B", weight: 1 },
  { id: "tenant_C", weight: 2 },
] as const;

/** Every system's queue/task name in its own database. */
export const QUEUE = "bench";
