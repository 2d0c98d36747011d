// When a worker process counts as gone. One definition for everything that asks: the console's
// live/lost badge, the overview's health, and the rescue of a dead worker's leases.

/**
 * How often a worker process writes its `workers` row (heartbeat_at, running, draining): the
 * worker runtime's default `workerHeartbeatMs` (apps/worker/src/runtime/worker.ts).
 */
export const WORKER_HEARTBEAT_INTERVAL_MS = 5_000;

/**
 * A worker that has not heartbeated for this long, and has not stopped cleanly, is lost: three
 * missed heartbeats. One late write on a loaded machine (a slow commit, a GC pause) does not mark
 * a healthy worker lost; a SIGKILLed one is reported within 15 s, not after its jobs' leases.
 */
export const WORKER_LOST_AFTER_MS = 3 * WORKER_HEARTBEAT_INTERVAL_MS;

/**
 * True when a worker whose last heartbeat was at `heartbeatAt` is lost at `now`. Pass the
 * database's `now()` where there is one: heartbeats are stamped by the database's clock.
 */
export const isWorkerLost = (heartbeatAt: Date, now: Date): boolean => now.getTime() - heartbeatAt.getTime() > WORKER_LOST_AFTER_MS;
