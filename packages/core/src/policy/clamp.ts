/** The policy an enqueue is clamped to: the queue's ceilings, then the tenant's. */
export type EnqueuePolicy = {
  queueId: string;
  poolId: string;
  defaultPriority: number;
  maxPriority: number;
  defaultMaxAttempts: number;
  maxAttempts: number;
  defaultTimeoutS: number;
  maxTimeoutS: number;
  defaultDeadlineS: number | null;
  tenantMaxPriority: number | null;
  tenantMaxAttempts: number | null;
  /** Over the tenant's admission limits: refuse with 429, or accept at priority 0. */
  admission: "reject" | "defer";
  /** Admission: the tenant's arrival rate (jobs/s) and backlog ceiling; null = none. */
  tenantRatePerSecond: number | null;
  tenantBacklogCap: number | null;
};

const clamp = (value: number, lo: number, hi: number) => Math.min(Math.max(value, lo), hi);

/** Producers cannot choose what policy owns: priority, attempts and timeout are clamped. */
export const clampEnvelope = (
  requested: { priority?: number; max_attempts?: number; timeout_s?: number },
  policy: EnqueuePolicy,
): { priority: number; maxAttempts: number; timeoutS: number } => {
  const priorityCeiling = Math.min(policy.maxPriority, policy.tenantMaxPriority ?? 100);
  const attemptsCeiling = Math.min(policy.maxAttempts, policy.tenantMaxAttempts ?? Number.MAX_SAFE_INTEGER);
  return {
    priority: clamp(requested.priority ?? policy.defaultPriority, 0, priorityCeiling),
    maxAttempts: clamp(requested.max_attempts ?? policy.defaultMaxAttempts, 1, attemptsCeiling),
    timeoutS: clamp(requested.timeout_s ?? policy.defaultTimeoutS, 1, policy.maxTimeoutS),
  };
};
