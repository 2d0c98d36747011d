import { randomUUID } from "node:crypto";
import os from "node:os";
import {
  claimJobs,
  handBackJobs,
  heartbeatWorker,
  registerWorker,
  startJobs,
  stopWorker,
  WORKER_HEARTBEAT_INTERVAL_MS,
  type ClaimedJob,
} from "@porter/core";
import type pg from "pg";
import { defaultHandlerMap, type HandlerMap } from "../handlers";
import type { Logger } from "../logger";
import { Attempt, type AttemptDeps } from "./attempt";
import { Completer } from "./completer";
import { HandedBackError, isConnectionError } from "./errors";
import { LeaseKeeper } from "./lease-keeper";
import { NotificationListener } from "./listener";
import { MaintenanceLeader, type MaintenanceLeaderOptions } from "./maintenance-leader";
import { jitter, sleep, Waker } from "./waker";

export type WorkerOptions = {
  /** Pool for claims, acks, heartbeats and effects; owned by the caller (the worker never ends it). */
  db: pg.Pool;
  /** For the dedicated LISTEN and maintenance connections. */
  connectionString: string;
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
  /** Take part in maintenance leadership. Default true. */
  maintenance?: boolean | Pick<MaintenanceLeaderOptions, "acquireEveryMs" | "runEveryMs" | "vacuumEveryMs">;
};

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

const DEFAULTS = {
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

/**
 * Runs `fn` until it does not fail with a connection error (PostgreSQL restarting: 57P03, refused,
 * terminated), with capped backoff and a log line per failure, for at most `timeoutMs`.
 */
const untilReachable = async <T>(fn: () => Promise<T>, logger: Logger, what: string, timeoutMs: number): Promise<T> => {
  const deadline = Date.now() + timeoutMs;
  for (let failures = 1; ; failures++) {
    try {
      return await fn();
    } catch (error) {
      if (!isConnectionError(error) || Date.now() >= deadline) throw error;
      const retryInMs = jitter(Math.min(250 * 2 ** failures, 5000));
      logger.warn(`database not reachable (${what}); retrying`, { err: error, retryInMs });
      await sleep(retryInMs);
    }
  }
};

/**
 * One worker process's data plane for one pool: a claim loop filling free slots with batched
 * claims, attempts running handlers under leases, a batched completer, one batched heartbeat for
 * all leases, LISTEN/NOTIFY wake-ups with a poll fallback, maintenance leadership, and a graceful
 * drain. Start with `PorterWorker.start`, stop with `drain()`.
 */
export class PorterWorker {
  readonly id: string;
  readonly concurrency: number;
  readonly version: string;
  private readonly lowWater: number;
  /** A fixed prefetch (the option), or undefined: adaptive. */
  private readonly fixedPrefetch: number | undefined;
  /** The prefetch in force: halved each time buffered jobs had to be handed back, regrown step by step as the buffer drains in time. */
  private prefetchNow: number;
  /** Adaptive prefetch: starts counted since `rateSince`, and the smoothed start rate (jobs/ms). */
  private started = 0;
  private rateSince = performance.now();
  private startRate = 0;
  private readonly attemptDeps: AttemptDeps;
  /** Claimed jobs waiting for a slot, oldest first, with when they were claimed. Not started (`isStarted` false). */
  private readonly buffer: Array<{ job: ClaimedJob; at: number }> = [];
  /** Buffered jobs launched since the last start statement was sent (`startJobs`). */
  private readonly starting: ClaimedJob[] = [];
  private startFlight: Promise<void> | undefined;
  private isStartScheduled = false;
  private bufferTimer: NodeJS.Timeout | undefined;
  private readonly attempts = new Map<string, Attempt>();
  private readonly waker = new Waker();
  private readonly completer: Completer;
  private readonly leaseKeeper: LeaseKeeper;
  private readonly listener: NotificationListener;
  private readonly leader: MaintenanceLeader | undefined;
  private readonly handlers: HandlerMap;
  private readonly logger: Logger;
  private isDrainingFlag = false;
  private isForced = false;
  private isMoreLikely = true;
  /** The last claim got some jobs but fewer than asked: work may be waiting behind a cap. */
  private isClaimShort = false;
  /**
   * A claim is running, or the loop has just been woken to run one: a notification now is
   * coalesced (debounced) rather than answered with a claim of its own.
   */
  private isClaiming = false;
  /** Counts nudges (work may be waiting): one that comes while a claim runs must not be lost. */
  private nudges = 0;
  private loopDone: Promise<void> = Promise.resolve();
  private drainPromise: Promise<DrainReport> | undefined;
  private idleWaiters: Array<() => void> = [];
  private forceWaiters: Array<() => void> = [];
  private debounceTimer: NodeJS.Timeout | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  private retryTimerAt = Infinity;
  private workerHeartbeatTimer: NodeJS.Timeout | undefined;

  private constructor(
    private readonly options: WorkerOptions,
    concurrency: number,
  ) {
    this.id = options.workerId ?? randomUUID();
    this.concurrency = concurrency;
    this.lowWater = Math.max(1, Math.floor(concurrency / 4));
    this.fixedPrefetch = options.prefetch === undefined ? undefined : Math.max(0, options.prefetch);
    this.prefetchNow = this.fixedPrefetch ?? concurrency;
    this.version = options.version ?? "dev";
    this.handlers = options.handlers ?? defaultHandlerMap();
    this.logger = options.logger.child({ workerId: this.id, pool: options.poolId });
    this.completer = new Completer(options.db, {
      logger: this.logger,
      flushIntervalMs: options.flushIntervalMs,
      maxBatch: options.flushBatch,
      // A claim cut short by a cap (tenant, queue, pool, resource key) leaves work behind that no
      // notification announces; results just written freed capacity: claim again now, not at the poll.
      onWritten: () => {
        if (this.isClaimShort) this.nudge();
      },
    });
    this.attemptDeps = {
      pool: options.db,
      workerId: this.id,
      version: this.version,
      logger: this.logger,
      handlers: this.handlers,
      completer: this.completer,
      hangGraceMs: options.hangGraceMs ?? DEFAULTS.hangGraceMs,
      heartbeat: (a) => this.leaseKeeper.extend([a]),
      onRetryScheduled: (runAt) => this.wakeAt(runAt.getTime()),
    };
    this.leaseKeeper = new LeaseKeeper(options.db, this.logger, () => this.attempts.values());
    this.listener = new NotificationListener({
      connectionString: options.connectionString,
      poolId: options.poolId,
      logger: this.logger,
      onReady: () => this.onReady(),
      // A catch-up claim, not debounced: a window opened now (say, during the first claim) would
      // hold back the next notification on an otherwise idle worker.
      onConnected: () => this.nudge(),
      onCancel: (rowId) => void this.onCancel(rowId),
    });
    const maintenance = options.maintenance ?? true;
    this.leader = maintenance
      ? new MaintenanceLeader({
          connectionString: options.connectionString,
          logger: this.logger,
          ...(typeof maintenance === "object" ? maintenance : {}),
        })
      : undefined;
  }

  /** Looks up the pool, registers the worker and starts claiming. */
  static async start(options: WorkerOptions): Promise<PorterWorker> {
    const timeoutMs = options.startTimeoutMs ?? DEFAULTS.startTimeoutMs;
    const { rows } = await untilReachable(
      () => options.db.query<{ worker_concurrency: number }>(`SELECT worker_concurrency FROM pools WHERE id = $1`, [options.poolId]),
      options.logger,
      "reading the pool",
      timeoutMs,
    );
    const pool = rows[0];
    if (!pool) throw new Error(`unknown pool "${options.poolId}"`);
    const concurrency = options.concurrency ?? pool.worker_concurrency;
    if (!Number.isInteger(concurrency) || concurrency < 1) throw new Error(`concurrency must be a positive integer, got ${concurrency}`);
    const worker = new PorterWorker(options, concurrency);
    await worker.begin();
    return worker;
  }

  /** Attempts running now. */
  get running(): number {
    return this.attempts.size;
  }

  get isDraining(): boolean {
    return this.isDrainingFlag;
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
    this.logger.info("worker started", { concurrency: this.concurrency, version: this.version, handlers: [...this.handlers.keys()] });
    this.leaseKeeper.start();
    this.listener.start();
    this.leader?.start();
    this.workerHeartbeatTimer = setInterval(() => void this.heartbeatWorker(), this.options.workerHeartbeatMs ?? DEFAULTS.workerHeartbeatMs);
    this.loopDone = this.claimLoop();
  }

  /**
   * Claims while there are free slots and reason to expect work: at start, after a full batch
   * (claim again at once), on a notification for this pool (at once when idle, debounced when
   * busy: see `onReady`), when a scheduled retry comes due, and on the jittered poll fallback
   * (faster while the listener is disconnected).
   */
  private async claimLoop(): Promise<void> {
    let errors = 0;
    while (!this.isDrainingFlag) {
      let free = this.room();
      if (free > 0 && this.isMoreLikely) {
        this.isClaiming = true;
        if (free < this.lowWater && this.attempts.size > 0) {
          // A claim costs about the same for 1 job as for 100: when only a few slots are free and
          // others are about to be, gather them for a moment instead of claiming one by one.
          await sleep(this.options.claimGatherMs ?? DEFAULTS.claimGatherMs);
          if (this.isDrainingFlag) {
            this.isClaiming = false;
            break;
          }
          free = this.room();
        }
        let jobs: ClaimedJob[];
        const claimStartedAt = performance.now();
        const nudgesBefore = this.nudges;
        try {
          // The jobs for free slots start at once and are marked started by the claim itself; the
          // prefetched rest are marked when they leave the buffer (`startBuffered`).
          const slots = Math.max(0, this.concurrency - this.attempts.size - this.buffer.length);
          jobs = await claimJobs(this.options.db, { poolId: this.options.poolId, workerId: this.id, limit: free, start: slots });
          errors = 0;
          this.logger.trace("claimed", { n: jobs.length, limit: free, ms: Math.round(performance.now() - claimStartedAt) });
        } catch (error) {
          errors += 1;
          const retryInMs = jitter(Math.min(250 * 2 ** errors, 5000));
          this.logger.warn("claim failed; retrying", { err: error, retryInMs });
          this.isClaiming = false;
          await this.waker.wait(retryInMs);
          continue;
        }
        this.isClaiming = false;
        if (this.isDrainingFlag && jobs.length > 0) this.logger.info("claimed while draining; these run within the grace", { n: jobs.length });
        const at = Date.now();
        for (const job of jobs) {
          if (job.isStarted) this.launch(job);
          else this.buffer.push({ job, at });
        }
        this.pump();
        // A short claim means the queue is empty for now — unless work was announced while it ran
        // (its NOTIFY may have come after the claim's snapshot): then claim again.
        this.isMoreLikely = jobs.length === free || this.nudges !== nudgesBefore;
        this.isClaimShort = jobs.length > 0 && jobs.length < free;
        if (this.isMoreLikely && this.room() > 0) continue;
      }
      const pollMs = this.listener.isConnected
        ? jitter(this.options.pollIntervalMs ?? DEFAULTS.pollIntervalMs, 0.2)
        : (this.options.disconnectedPollIntervalMs ?? DEFAULTS.disconnectedPollIntervalMs);
      const isWoken = await this.waker.wait(pollMs);
      if (!isWoken) this.isMoreLikely = true;
    }
  }

  /** How many more jobs this worker may hold: free slots plus the prefetch, minus the buffer. */
  private room(): number {
    return this.concurrency + this.prefetchNow - this.attempts.size - this.buffer.length;
  }

  /** The prefetch ceiling: the fixed option, or the jobs started in the prefetch window at the current rate. */
  private prefetchCeiling(): number {
    if (this.fixedPrefetch !== undefined) return this.fixedPrefetch;
    const now = performance.now();
    const elapsed = now - this.rateSince;
    if (elapsed >= 25) {
      // Fast attack, slow decay: a burst raises the rate within one claim or two; a quieter spell
      // lowers it by 30% per 25 ms sample.
      const rate = this.started / elapsed;
      this.startRate = rate >= this.startRate ? rate : 0.7 * this.startRate + 0.3 * rate;
      this.started = 0;
      this.rateSince = now;
    }
    const window = this.options.prefetchWindowMs ?? DEFAULTS.prefetchWindowMs;
    const max = this.options.prefetchMax ?? DEFAULTS.prefetchMax;
    return Math.min(max, Math.max(this.concurrency, Math.round(this.startRate * window)));
  }

  /** Starts buffered jobs while slots are free; their start marks follow in one statement (`markStarted`). */
  private pump(): void {
    const hadBuffer = this.buffer.length > 0;
    while (this.attempts.size < this.concurrency && this.buffer.length > 0) {
      const { job } = this.buffer.shift()!;
      this.starting.push(job);
      this.launch(job);
    }
    this.scheduleStarts();
    const ceiling = this.prefetchCeiling();
    if (this.prefetchNow > ceiling) {
      this.prefetchNow = ceiling;
    } else if (hadBuffer && this.buffer.length === 0 && this.prefetchNow < ceiling) {
      // The buffer ran dry in time: double towards the ceiling (halved on hand-back, below).
      this.prefetchNow = Math.min(ceiling, Math.max(this.prefetchNow * 2, 1));
    }
    if (this.buffer.length > 0) this.bufferTimer ??= setTimeout(() => void this.expireBuffer(), this.maxBufferMs());
  }

  private maxBufferMs(): number {
    return this.options.maxBufferMs ?? DEFAULTS.maxBufferMs;
  }

  /**
   * A buffered job must not wait long on a busy worker while others could run it (its lease is
   * ticking and is not heartbeated until it starts): past `maxBufferMs` it is handed back.
   */
  private async expireBuffer(): Promise<void> {
    this.bufferTimer = undefined;
    const cutoff = Date.now() - this.maxBufferMs();
    const stale: ClaimedJob[] = [];
    while (this.buffer.length > 0 && this.buffer[0]!.at <= cutoff) stale.push(this.buffer.shift()!.job);
    if (stale.length > 0) {
      // Slots are busy with long work: prefetching only moves jobs back and forth. Back off.
      this.prefetchNow = Math.floor(this.prefetchNow / 2);
      await this.handBackBuffered(stale);
    }
    if (this.buffer.length > 0) this.bufferTimer = setTimeout(() => void this.expireBuffer(), this.maxBufferMs());
  }

  private async handBackBuffered(jobs: ClaimedJob[]): Promise<void> {
    try {
      await handBackJobs(this.options.db, jobs.map((j) => ({ id: j.id, leaseToken: j.leaseToken, attempt: j.attempt })));
      this.logger.debug("handed back buffered jobs", { n: jobs.length });
    } catch (error) {
      this.logger.warn("could not hand back buffered jobs; they run again once their leases expire", { err: error, n: jobs.length });
    }
  }

  /**
   * Jobs leaving the buffer are marked started in one statement for all that left it in this turn
   * of the event loop (one statement in flight; those leaving meanwhile go in the next). The
   * statement is sent at once, before their handlers do anything that could kill the worker, but
   * not waited for: a slot never waits on it (waiting cost burn-down 3.6× — a round trip per slot
   * per job). A worker SIGKILLed with jobs in its buffer leaves them unmarked: released as
   * `not_started`, their attempts not counted. A job whose lease was lost before its mark (rescued,
   * cancelled) is stopped like any lost lease.
   */
  private scheduleStarts(): void {
    if (this.isStartScheduled || this.startFlight || this.starting.length === 0) return;
    this.isStartScheduled = true;
    setImmediate(() => {
      this.isStartScheduled = false;
      if (this.startFlight || this.starting.length === 0) return;
      this.startFlight = this.startBuffered(this.starting.splice(0)).finally(() => {
        this.startFlight = undefined;
        this.scheduleStarts();
      });
    });
  }

  private async startBuffered(batch: ClaimedJob[]): Promise<void> {
    for (let failures = 1; ; failures++) {
      try {
        const { lost } = await startJobs(this.options.db, batch.map((j) => ({ id: j.id, leaseToken: j.leaseToken, attempt: j.attempt })));
        // Lost: rescued, re-claimed or finished meanwhile (an attempt may even have been acked
        // already: closed, so this is a no-op for it).
        const byId = new Map(batch.map((j) => [j.id, j]));
        for (const id of lost) {
          const attempt = this.attempts.get(id);
          // The same attempt, not a later claim of the same row by this worker.
          if (attempt && attempt.job.leaseToken === byId.get(id)?.leaseToken) attempt.loseLease();
        }
        return;
      } catch (error) {
        if (!isConnectionError(error) || failures >= 5) {
          // Their attempts run on; rescued meanwhile, one would be recorded `not_started` (its late
          // results are refused by the fence, its effects are ledgered).
          this.logger.warn("could not mark prefetched jobs started", { err: error, n: batch.length });
          return;
        }
        await sleep(jitter(Math.min(100 * 2 ** failures, 2000)));
      }
    }
  }

  private launch(job: ClaimedJob): void {
    const attempt = new Attempt(job, this.attemptDeps);
    this.started += 1;
    this.attempts.set(job.id, attempt);
    void attempt
      .run()
      .catch((error: unknown) => this.logger.error("attempt crashed", { err: error, jobId: job.jobId }))
      .finally(() => {
        if (this.attempts.get(job.id) === attempt) this.attempts.delete(job.id);
        this.pump();
        if (this.isMoreLikely) this.waker.wake();
        if (this.attempts.size === 0) for (const waiter of this.idleWaiters.splice(0)) waiter();
      });
  }

  /** There may be work: claim as soon as a slot is free. */
  private nudge(): void {
    this.nudges += 1;
    this.isMoreLikely = true;
    this.waker.wake();
  }

  /**
   * Work became ready in this pool. An idle worker claims at once: the job is committed (the
   * notification is sent at commit), so a claim started now finds it. A busy one — a claim under
   * way, every slot taken, or a window already open — coalesces notifications for
   * `notifyDebounceMs` into one claim.
   */
  private onReady(): void {
    if (this.debounceTimer === undefined && !this.isClaiming && this.attempts.size < this.concurrency) {
      // Marked before the loop runs, so the rest of a burst delivered in the same read is coalesced.
      this.isClaiming = true;
      this.nudge();
      return;
    }
    this.debounceTimer ??= setTimeout(() => {
      this.debounceTimer = undefined;
      this.nudge();
    }, this.options.notifyDebounceMs ?? DEFAULTS.notifyDebounceMs);
  }

  /** A retry of ours becomes claimable at `at`: wake then rather than at the next poll. */
  private wakeAt(at: number): void {
    if (this.isDrainingFlag) return;
    const delayMs = Math.max(0, at - Date.now()) + 5;
    if (delayMs > 60_000 || at >= this.retryTimerAt) return;
    clearTimeout(this.retryTimer);
    this.retryTimerAt = at;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      this.retryTimerAt = Infinity;
      this.nudge();
    }, delayMs);
  }

  private async onCancel(rowId: string): Promise<void> {
    const attempt = this.attempts.get(rowId);
    if (!attempt?.isOpen) return;
    try {
      const { rows } = await this.options.db.query<{ cancel_reason: string | null }>(
        `SELECT cancel_reason FROM jobs WHERE id = $1 AND lease_token = $2 AND cancel_requested_at IS NOT NULL`,
        [attempt.job.id, attempt.job.leaseToken],
      );
      if (rows[0]) attempt.requestCancel(rows[0].cancel_reason ?? undefined);
    } catch (error) {
      // The next heartbeat reports the cancel request too.
      this.logger.warn("could not read a cancel request; the next heartbeat will", { err: error, jobId: attempt.job.jobId });
    }
  }

  private async heartbeatWorker(): Promise<void> {
    try {
      await heartbeatWorker(this.options.db, { id: this.id, running: this.attempts.size, draining: this.isDrainingFlag });
    } catch (error) {
      this.logger.warn("worker heartbeat failed", { err: error });
    }
  }

  private async runDrain(graceMs: number): Promise<DrainReport> {
    this.isDrainingFlag = true;
    this.waker.wake();
    this.logger.info("draining: stopped claiming", { running: this.attempts.size, graceMs });
    await this.loopDone;
    clearTimeout(this.bufferTimer);
    const buffered = this.buffer.splice(0).map((b) => b.job);
    if (buffered.length > 0) await this.handBackBuffered(buffered);
    await this.heartbeatWorker();

    let graceTimer: NodeJS.Timeout | undefined;
    const finishedInGrace = await Promise.race([
      new Promise<boolean>((resolve) => (this.attempts.size === 0 ? resolve(true) : this.idleWaiters.push(() => resolve(true)))),
      new Promise<boolean>((resolve) => (graceTimer = setTimeout(() => resolve(false), graceMs))),
      new Promise<boolean>((resolve) => (this.isForced ? resolve(false) : this.forceWaiters.push(() => resolve(false)))),
    ]);
    clearTimeout(graceTimer);

    const rest = [...this.attempts.values()].filter((a) => a.isOpen);
    for (const attempt of rest) attempt.closeForHandBack();
    let handedBack: string[] = [];
    let stale: string[] = [];
    if (rest.length > 0) {
      try {
        ({ handedBack, stale } = await handBackJobs(this.options.db, rest.map((a) => a.ref)));
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
    clearTimeout(this.debounceTimer);
    clearTimeout(this.retryTimer);
    this.leaseKeeper.stop();
    await Promise.all([this.listener.close(), this.leader?.close()]);
    try {
      await stopWorker(this.options.db, this.id);
    } catch (error) {
      this.logger.warn("could not mark the worker stopped", { err: error });
    }
  }
}
