// Worker liveness, one definition for everything that asks: the rescue of a lost worker's leases,
// the console's live/lost badge and the overview's health.

/**
 * Worker liveness, in one place: how often a worker process writes its `workers` heartbeat row,
 * and how stale that row may get before the worker counts as lost. The maintenance leader
 * releases a lost worker's RUNNING jobs at once (not at their lease's end; `rescueLostWorkers`),
 * and the console shows the worker as lost. Several intervals of slack, so a stalled event loop or
 * a slow database on a loaded machine is not taken for a dead worker.
 */

/** How often a worker updates `workers.heartbeat_at`, in milliseconds. */
export const WORKER_HEARTBEAT_INTERVAL_MS = 2_000;

/** A worker whose `heartbeat_at` is older than this is lost (5 missed heartbeats), in milliseconds. */
export const WORKER_LOST_AFTER_MS = 5 * WORKER_HEARTBEAT_INTERVAL_MS;

/**
 * True when a worker that last heartbeated at `heartbeatAt` counts as lost at `now`. Pass the
 * database's `now()` where there is one: heartbeats are stamped by the database's clock.
 */
export const isWorkerLost = (heartbeatAt: Date, now: Date = new Date()): boolean => now.getTime() - heartbeatAt.getTime() > WORKER_LOST_AFTER_MS;
