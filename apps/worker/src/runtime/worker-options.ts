import { WORKER_HEARTBEAT_INTERVAL_MS } from "@porter/core";
import type pg from "pg";
import type { HandlerMap } from "../handlers";
import type { Logger } from "../logger";
import type { MaintenanceLeaderOptions } from "./maintenance-leader";
import type { WorkerProbe } from "./worker-probe";

export type WorkerOptions = {
  /** pg.Pool for claims, acks, heartbeats and effects; owned by the caller (the worker never ends it). */
  db: pg.Pool;
  /** For the dedicated LISTEN and maintenance connections (unless `listenConnectionString` is given). */
  connectionString: string;
  /** The dedicated LISTEN and maintenance connections' own connection string (direct to PostgreSQL when `db` goes through a pooler). Default `connectionString`. */
  listenConnectionString?: string | undefined;
  /** The pool (lane) whose queues this worker serves. */
  poolId: string;
  /** Slots: jobs run at once. Default: the pool's `worker_concurrency`. */
  concurrency?: number;
  logger: Logger;
  handlers?: HandlerMap;
  /** Recorded with the worker and in structured errors. */
  version?: string;
  workerId?: string;
  /** Drain: how long in-flight work may finish before it is handed back. Default 10 000 ms. */
  graceMs?: number;
  /** How long a handler may ignore its aborted signal before the worker records the attempt anyway. Default 2 000 ms. */
  hangGraceMs?: number;
  /** Poll fallback while the listener is connected (jittered). Default 1 000 ms. */
  pollIntervalMs?: number;
  /** Poll interval while the listener is disconnected. Default 250 ms. */
  disconnectedPollIntervalMs?: number;
  /**
   * Coalescing of notifications on a busy worker: one arriving while a claim is under way or every
   * slot is taken opens this window, and everything arriving within it causes one claim when it
   * ends (a burst of notifications costs one claim per window, not one each). An idle worker (a
   * free slot, no claim under way, no window open) claims at once, without waiting. Default 2 ms.
   */
  notifyDebounceMs?: number;
  /** When fewer than a quarter of the slots are free, wait this long for more before claiming. Default 2 ms. */
  claimGatherMs?: number;
  /**
   * Jobs claimed ahead of free slots, held in a local buffer and started as slots free up, so a
   * claim round trip is paid per batch rather than per few jobs. Default: adaptive — as many jobs
   * as this worker starts in `prefetchWindowMs` at its measured start rate (at least
   * `concurrency`, at most `prefetchMax`), so short jobs are claimed hundreds at a time while a
   * worker of slow jobs holds few ahead. A fixed number disables the adaptation. A buffered job
   * was claimed, so later work of other tenants waits behind the buffer: the window bounds that
   * wait. Backs off by itself (halving) when slots stay busy longer than `maxBufferMs`.
   */
  prefetch?: number;
  /** Adaptive prefetch: buffer about this much work ahead, at the measured start rate. Default 50 ms. */
  prefetchWindowMs?: number;
  /** Adaptive prefetch: the most jobs held ahead of free slots. Default 1 000. */
  prefetchMax?: number;
  /** A buffered job not started within this long is handed back. Default 2 000 ms. */
  maxBufferMs?: number;
  /**
   * The acks of a capped queue's jobs hand their room to the queue's next jobs in the ack's own
   * statement, while the last claim named that cap as its bound: one round trip and one commit per
   * round of a capped queue instead of two (core's `porter_handover`; docs/scheduling.md). Caps stay
   * exact. Off: every freed room is claimed again by the claim loop. Default true.
   */
  capHandover?: boolean;
  /** Completer: longest a result waits before its batch is written. Default 5 ms. */
  flushIntervalMs?: number;
  /** Completer: a batch this large is written at once. Default 500. */
  flushBatch?: number;
  /**
   * Worker liveness row update. Default `WORKER_HEARTBEAT_INTERVAL_MS` (@porter/core
   * worker-liveness.ts); the maintenance leader counts a worker lost after `WORKER_LOST_AFTER_MS`
   * without one and releases its jobs, so a longer interval than that default is unsafe.
   */
  workerHeartbeatMs?: number;
  /** How long `start` waits for an unreachable database (a server restarting) before failing. Default 60 000 ms. */
  startTimeoutMs?: number;
  /** The real `webhook.deliver` (alert webhooks): extra trusted CAs (PEM) and the request timeout. */
  webhook?: { ca?: string | Buffer | undefined; timeoutMs?: number | undefined };
  /** Told of claims, result batches, heartbeats and outcomes, in memory (the worker's metrics, `--metrics-port`). Default: nothing. */
  probe?: WorkerProbe;
  /** Take part in maintenance leadership. Default true. */
  maintenance?: boolean | Pick<MaintenanceLeaderOptions, "acquireEveryMs" | "runEveryMs" | "vacuumEveryMs" | "alertsEveryMs">;
};

/** What a worker uses for each option left unset. */
export const WORKER_DEFAULTS = {
  graceMs: 10_000,
  hangGraceMs: 2_000,
  pollIntervalMs: 1_000,
  disconnectedPollIntervalMs: 250,
  notifyDebounceMs: 2,
  claimGatherMs: 2,
  maxBufferMs: 2_000,
  prefetchWindowMs: 50,
  prefetchMax: 1_000,
  workerHeartbeatMs: WORKER_HEARTBEAT_INTERVAL_MS,
  startTimeoutMs: 60_000,
};
