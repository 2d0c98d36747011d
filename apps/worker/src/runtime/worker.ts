import { randomUUID } from "node:crypto";
import os from "node:os";
import { handBackJobs, heartbeatWorker, readCancelRequest, readPoolSettings, registerWorker, StreamNotifier, stopWorker } from "@porter/core";
import { defaultHandlerMap, type HandlerMap } from "../handlers";
import type { Logger } from "../logger";
import { ClaimLoop } from "./claim-loop";
import { Completer } from "./completer";
import { HandedBackError } from "./errors";
import { LeaseKeeper } from "./lease-keeper";
import { NotificationListener } from "./listener";
import { MaintenanceLeader } from "./maintenance-leader";
import { PrefetchBuffer } from "./prefetch-buffer";
import { Slots } from "./slots";
import { untilReachable } from "./until-reachable";
import { WORKER_DEFAULTS as DEFAULTS, type WorkerOptions } from "./worker-options";

export type { WorkerOptions } from "./worker-options";

/** What a drain did. */
export type DrainReport = {
  /** True when every in-flight attempt finished within the grace period. */
  finishedInGrace: boolean;
  /** Row ids returned to READY without burning an attempt. */
  handedBack: string[];
  /** Row ids whose lease was already gone when handing back. */
  stale: string[];
  /** False when buffered results could not all be written before the flush timeout. */
  flushed: boolean;
};

/**
 * One worker process's data plane for one pool, composed of its parts: the claim loop and its
 * wake-ups (claim-loop.ts: LISTEN/NOTIFY, debounce, retries due, poll fallback), the prefetch
 * buffer (prefetch-buffer.ts: adaptive prefetch, start marks, hand-back of stale buffered jobs),
 * the slots (slots.ts: attempts running handlers under leases, attempt.ts), a batched completer,
 * one batched heartbeat for all leases, maintenance leadership, and a graceful drain. Start with
 * `PorterWorker.start`, stop with `drain()`.
 */
export class PorterWorker {
  readonly id: string;
  readonly concurrency: number;
  readonly version: string;
  private readonly slots: Slots;
  private readonly buffer: PrefetchBuffer;
  private readonly claimLoop: ClaimLoop;
  private readonly completer: Completer;
  private readonly leaseKeeper: LeaseKeeper;
  private readonly listener: NotificationListener;
  private readonly leader: MaintenanceLeader | undefined;
  private readonly handlers: HandlerMap;
  private readonly logger: Logger;
  private isForced = false;
  private drainPromise: Promise<DrainReport> | undefined;
  private forceWaiters: Array<() => void> = [];
  private workerHeartbeatTimer: NodeJS.Timeout | undefined;
  /** Wakes the live status stream's readers after this worker's claims, acks, failures and progress (issue 13). */
  private readonly streamNotifier: StreamNotifier;

  private constructor(
    private readonly options: WorkerOptions,
    concurrency: number,
  ) {
    this.id = options.workerId ?? randomUUID();
    this.concurrency = concurrency;
    this.version = options.version ?? "dev";
    this.handlers = options.handlers ?? defaultHandlerMap({ db: options.db, ...options.webhook });
    this.logger = options.logger.child({ workerId: this.id, pool: options.poolId });
    this.streamNotifier = new StreamNotifier(options.db);
    this.completer = new Completer(options.db, {
      logger: this.logger,
      flushIntervalMs: options.flushIntervalMs,
      maxBatch: options.flushBatch,
      probe: options.probe,
      beforeWrite: () => this.buffer.startsLanded(),
      // The attempt whose result this is still holds its slot.
      isAlone: () => this.slots.size <= 1 && this.buffer.depth === 0,
      onWritten: () => {
        this.streamNotifier.touch();
        this.claimLoop.onWritten();
      },
      // A capped queue's round in one commit: the acks of its jobs hand their room to its next
      // jobs (core's `porter_handover`) while the last claim named the queue's cap as its bound.
      handover: (acks) => {
        if (options.capHandover === false) return undefined;
        const queueIds = this.claimLoop.handoverQueues();
        // At most one job per ack; free slots reserved for those it marks started, as a claim reserves them.
        const limit = Math.min(acks, this.buffer.room());
        if (queueIds.length === 0 || limit <= 0) return undefined;
        return { poolId: options.poolId, workerId: this.id, queueIds, limit, start: this.buffer.reserveStarts(limit) };
      },
      onHandoverEnded: (handover) => this.buffer.releaseStarts(handover.start ?? 0),
      isUrgent: (item) => {
        if (options.capHandover === false) return false;
        const job = this.slots.get(item.id)?.job;
        return job !== undefined && this.claimLoop.isHandoverQueue(job.queueId);
      },
      onHandedOver: (jobs) => {
        // A write under way when the drain began: the jobs go back at once (READY, attempt not counted).
        if (this.claimLoop.isStopping) return this.buffer.handBackNow(jobs);
        if (this.logger.isLevelEnabled("debug")) this.logger.debug("handed over", { n: jobs.length });
        this.claimLoop.onHandedOver(jobs);
      },
    });
    this.slots = new Slots(concurrency, {
      attempt: {
        db: options.db,
        workerId: this.id,
        version: this.version,
        logger: this.logger,
        handlers: this.handlers,
        completer: this.completer,
        hangGraceMs: options.hangGraceMs ?? DEFAULTS.hangGraceMs,
        heartbeat: (a) => this.leaseKeeper.extend([a]),
        onRetryScheduled: (runAt) => this.claimLoop.wakeAt(runAt.getTime()),
        onResultWritten: (job) => this.claimLoop.onResultWritten(job),
        probe: options.probe,
      },
      logger: this.logger,
      // A freed slot takes a buffered job first, then the loop claims if more work is likely.
      onFreed: () => {
        this.buffer.pump();
        this.claimLoop.onSlotFreed();
      },
    });
    this.buffer = new PrefetchBuffer(this.slots, options.db, this.logger, {
      prefetch: options.prefetch,
      windowMs: options.prefetchWindowMs ?? DEFAULTS.prefetchWindowMs,
      max: options.prefetchMax ?? DEFAULTS.prefetchMax,
      maxBufferMs: options.maxBufferMs ?? DEFAULTS.maxBufferMs,
    });
    this.leaseKeeper = new LeaseKeeper(
      options.db,
      this.logger,
      () => this.slots.values(),
      undefined,
      () => this.streamNotifier.touch(),
      options.probe,
    );
    this.listener = new NotificationListener({
      connectionString: options.listenConnectionString ?? options.connectionString,
      poolId: options.poolId,
      logger: this.logger,
      onReady: () => this.claimLoop.onReady(),
      // A catch-up claim, not debounced: a window opened now (say, during the first claim) would
      // hold back the next notification on an otherwise idle worker.
      onConnected: () => this.claimLoop.nudge(),
      onCancel: (rowId) => void this.onCancel(rowId),
    });
    this.claimLoop = new ClaimLoop(this.slots, this.buffer, {
      db: options.db,
      poolId: options.poolId,
      workerId: this.id,
      logger: this.logger,
      isListening: () => this.listener.isConnected,
      claimGatherMs: options.claimGatherMs ?? DEFAULTS.claimGatherMs,
      pollIntervalMs: options.pollIntervalMs ?? DEFAULTS.pollIntervalMs,
      disconnectedPollIntervalMs: options.disconnectedPollIntervalMs ?? DEFAULTS.disconnectedPollIntervalMs,
      notifyDebounceMs: options.notifyDebounceMs ?? DEFAULTS.notifyDebounceMs,
      onClaimed: () => this.streamNotifier.touch(),
      probe: options.probe,
    });
    const maintenance = options.maintenance ?? true;
    this.leader = maintenance
      ? new MaintenanceLeader({
          connectionString: options.listenConnectionString ?? options.connectionString,
          logger: this.logger,
          notifier: { touch: () => this.streamNotifier.touch() },
          ...(typeof maintenance === "object" ? maintenance : {}),
        })
      : undefined;
  }

  /** Looks up the pool, registers the worker and starts claiming. */
  static async start(options: WorkerOptions): Promise<PorterWorker> {
    const timeoutMs = options.startTimeoutMs ?? DEFAULTS.startTimeoutMs;
    const pool = await untilReachable(() => readPoolSettings(options.db, options.poolId), options.logger, "reading the pool", timeoutMs);
    if (!pool) throw new Error(`unknown pool "${options.poolId}"`);
    const concurrency = options.concurrency ?? pool.workerConcurrency;
    if (!Number.isInteger(concurrency) || concurrency < 1) throw new Error(`concurrency must be a positive integer, got ${concurrency}`);
    const worker = new PorterWorker(options, concurrency);
    await worker.begin();
    return worker;
  }

  /** Attempts running now. */
  get running(): number {
    return this.slots.size;
  }

  /** Claimed jobs waiting in the prefetch buffer for a free slot. */
  get buffered(): number {
    return this.buffer.depth;
  }

  /** The prefetch in force: the most jobs held ahead of free slots now. */
  get prefetchLimit(): number {
    return this.buffer.prefetchLimit;
  }

  get isDraining(): boolean {
    return this.claimLoop.isStopping;
  }

  /**
   * Graceful drain: stops claiming at once, marks the worker draining, lets in-flight work finish
   * within `graceMs`, hands the rest back (READY, attempt not burned) and aborts their signals,
   * writes every buffered result, and marks the worker stopped. Idempotent.
   */
  drain(options: { graceMs?: number } = {}): Promise<DrainReport> {
    this.drainPromise ??= this.runDrain(options.graceMs ?? this.options.graceMs ?? DEFAULTS.graceMs);
    return this.drainPromise;
  }

  /** Ends a drain's grace period now (a second SIGTERM): unfinished work is handed back at once. */
  force(): void {
    this.isForced = true;
    for (const waiter of this.forceWaiters.splice(0)) waiter();
  }

  private async begin(): Promise<void> {
    await untilReachable(
      () =>
        registerWorker(this.options.db, {
          id: this.id,
          poolId: this.options.poolId,
          host: os.hostname(),
          pid: process.pid,
          version: this.version,
          concurrency: this.concurrency,
        }),
      this.logger,
      "registering the worker",
      this.options.startTimeoutMs ?? DEFAULTS.startTimeoutMs,
    );
    this.logger.info("worker started", {
      concurrency: this.concurrency,
      version: this.version,
      handlers: [...this.handlers.keys()],
      dbPoolSize: this.options.db.options.max,
      separateListenConnection: this.options.listenConnectionString !== undefined && this.options.listenConnectionString !== this.options.connectionString,
    });
    this.leaseKeeper.start();
    this.listener.start();
    this.leader?.start();
    this.workerHeartbeatTimer = setInterval(() => void this.heartbeatWorker(), this.options.workerHeartbeatMs ?? DEFAULTS.workerHeartbeatMs);
    this.claimLoop.start();
  }

  private async onCancel(rowId: string): Promise<void> {
    const attempt = this.slots.get(rowId);
    if (!attempt?.isOpen) return;
    try {
      const request = await readCancelRequest(this.options.db, attempt.job);
      if (request) attempt.requestCancel(request.reason ?? undefined);
    } catch (error) {
      // The next heartbeat reports the cancel request too.
      this.logger.warn("could not read a cancel request; the next heartbeat will", { err: error, jobId: attempt.job.jobId });
    }
  }

  private async heartbeatWorker(): Promise<void> {
    try {
      await heartbeatWorker(this.options.db, { id: this.id, running: this.slots.size, draining: this.isDraining });
    } catch (error) {
      this.logger.warn("worker heartbeat failed", { err: error });
    }
  }

  private async runDrain(graceMs: number): Promise<DrainReport> {
    const claimsStopped = this.claimLoop.stop();
    this.logger.info("draining: stopped claiming", { running: this.slots.size, graceMs });
    await claimsStopped;
    await this.buffer.handBackAll();
    await this.heartbeatWorker();

    let graceTimer: NodeJS.Timeout | undefined;
    const finishedInGrace = await Promise.race([
      this.slots.whenIdle().then(() => true),
      new Promise<boolean>((resolve) => (graceTimer = setTimeout(() => resolve(false), graceMs))),
      new Promise<boolean>((resolve) => (this.isForced ? resolve(false) : this.forceWaiters.push(() => resolve(false)))),
    ]);
    clearTimeout(graceTimer);

    const rest = [...this.slots.values()].filter((a) => a.isOpen);
    for (const attempt of rest) attempt.closeForHandBack();
    let handedBack: string[] = [];
    let stale: string[] = [];
    if (rest.length > 0) {
      try {
        ({ handedBack, stale } = await handBackJobs(
          this.options.db,
          rest.map((a) => a.ref),
        ));
      } catch (error) {
        this.logger.error("could not hand back unfinished jobs; they run again once their leases expire", { err: error, n: rest.length });
      }
      for (const attempt of rest) attempt.controller.abort(new HandedBackError(attempt.job.jobId));
      this.logger.info("handed back unfinished jobs", { handedBack: handedBack.length, stale: stale.length });
    }

    const flushed = await this.completer.flush(this.isForced ? 3_000 : 10_000);
    if (!flushed) this.logger.error("some results were not recorded; those jobs run again once their leases expire");
    await this.shutdown();
    this.logger.info("worker stopped", { finishedInGrace, handedBack: handedBack.length });
    return { finishedInGrace, handedBack, stale, flushed };
  }

  private async shutdown(): Promise<void> {
    clearInterval(this.workerHeartbeatTimer);
    this.claimLoop.clearTimers();
    this.leaseKeeper.stop();
    await Promise.all([this.listener.close(), this.leader?.close()]);
    this.streamNotifier.close();
    this.claimLoop.releaseConnection();
    this.completer.releaseConnection();
    try {
      await stopWorker(this.options.db, this.id);
    } catch (error) {
      this.logger.warn("could not mark the worker stopped", { err: error });
    }
  }
}
