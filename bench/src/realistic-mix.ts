/** A well-mixed 32-bit hash of a job number, so every system fails the same jobs. */
export const mix = (k: number): number => {
  let h = Math.imul(k ^ 0x9e3779b9, 0x85ebca6b) >>> 0;
  h = Math.imul(h ^ (h >>> 16), 0x7feb352d) >>> 0;
  h = Math.imul(h ^ (h >>> 15), 0x846ca68b) >>> 0;
  return (h ^ (h >>> 16)) >>> 0;
};

/**
 * Scenario (i)'s workload, the same for every system (the demo's `background` pool, shrunk to the
 * bench's budget): four queues in one pool, two of them capped; three tenants weighted 1/1/2;
 * mixed durations. Everything about job k follows from k, so the producer and the worker process
 * agree without sharing state.
 */
export const REALISTIC_QUEUES = [
  { id: "bulk", cap: 4, share: 1 },
  { id: "default", cap: null, share: 3 },
  { id: "reports", cap: 8, share: 1 },
  { id: "events", cap: null, share: 3 },
] as const;
export type RealisticQueue = (typeof REALISTIC_QUEUES)[number];

export const REALISTIC_TENANTS = [
  { id: "tenant_A", weight: 1 },
  { id: "tenant_B", weight: 1 },
  { id: "tenant_C", weight: 2 },
] as const;

/** Handler durations: half the jobs 0 ms, the rest 1, 2, 5, 10 or 20 ms (mean 3.8 ms). */
export const REALISTIC_DURATIONS_MS = [0, 0, 0, 0, 0, 1, 2, 5, 10, 20] as const;

const SLOTS: RealisticQueue[] = REALISTIC_QUEUES.flatMap((q) => Array.from({ length: q.share }, () => q));

/** Job k's queue: 1/8 each to the capped ones, 3/8 each to the uncapped ones. */
export const queueOf = (k: number): RealisticQueue => SLOTS[mix(k) % SLOTS.length]!;

/** Job k's tenant: equal backlogs, so the weights decide who runs first. */
export const tenantOf = (k: number) => REALISTIC_TENANTS[k % REALISTIC_TENANTS.length]!;

export const durationOf = (k: number): number => REALISTIC_DURATIONS_MS[(mix(k) >>> 8) % REALISTIC_DURATIONS_MS.length]!;

export const meanDurationMs = REALISTIC_DURATIONS_MS.reduce<number>((a, b) => a + b, 0) / REALISTIC_DURATIONS_MS.length;

/**
 * Worker slots per queue for a peer that has no pool-wide cap (pg-boss: one `work()` per queue with
 * its own localConcurrency): a capped queue gets its cap, the uncapped ones split the rest.
 */
export const slotsPerQueue = (concurrency: number): Map<string, number> => {
  const capped = REALISTIC_QUEUES.reduce((a, q) => a + (q.cap ?? 0), 0);
  const uncapped = REALISTIC_QUEUES.filter((q) => q.cap === null).length;
  const rest = Math.max(uncapped, concurrency - capped);
  return new Map(REALISTIC_QUEUES.map((q) => [q.id, q.cap ?? Math.floor(rest / uncapped)]));
};
