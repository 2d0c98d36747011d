import { type ClaimedJob, handBackJobs, startJobs } from "@porter/core";
import type pg from "pg";
import type { Logger } from "../logger";
import { isConnectionError } from "./errors";
import type { Slots } from "./slots";
import { jitter, sleep } from "./waker";

export type PrefetchOptions = {
  /** A fixed prefetch, or undefined: adaptive (see `WorkerOptions.prefetch`). */
  prefetch: number | undefined;
  /** Adaptive prefetch: buffer about this much work ahead, at the measured start rate. */
  windowMs: number;
  /** Adaptive prefetch: the most jobs held ahead of free slots. */
  max: number;
  /** A buffered job not started within this long is handed back. */
  maxBufferMs: number;
};

/**
 * Claimed jobs held ahead of free slots, so a claim round trip is paid per batch rather than per
 * few jobs. Jobs claimed into free slots are launched at once (the claim marked them started);
 * the rest wait here, oldest first, and are launched as slots free up, their start marks sent in
 * one statement per turn of the event loop. Jobs under a limit that bounded their claim (a capped
 * queue at its cap, say) go first: a buffered job holds room under its cap while it waits, and
 * that room is the scarce thing — every other job of the capped queue, on any worker, waits for
 * it (issue 15, scenario (i): `bulk`, cap 4, ran 0.5–1 jobs at a time behind ~50 buffered jobs).
 * The prefetch adapts to the start rate (jobs started in `windowMs`, between `concurrency` and
 * `max`), halves when buffered jobs had to be handed back after `maxBufferMs`, and doubles back
 * towards the ceiling while the buffer drains in time.
 */
export class PrefetchBuffer {
  /** Claimed jobs waiting for a slot, oldest first, with when they were claimed. Not started (`isStarted` false). */
  private readonly buffer: Array<{ job: ClaimedJob; at: number }> = [];
  /** Claimed jobs under a limit that bounded their claim (they hold its room while they wait), oldest first: started before `buffer`'s. */
  private readonly bounded: Array<{ job: ClaimedJob; at: number }> = [];
  /** A fixed prefetch (the option), or undefined: adaptive. */
  private readonly fixedPrefetch: number | undefined;
  /** The prefetch in force: halved each time buffered jobs had to be handed back, regrown step by step as the buffer drains in time. */
  private prefetchNow: number;
  /** Adaptive prefetch: starts counted since `rateSince`, and the smoothed start rate (jobs/ms). */
  private started = 0;
  private rateSince = performance.now();
  private startRate = 0;
  /** Buffered jobs launched since the last start statement was sent (`startJobs`). */
  private readonly starting: ClaimedJob[] = [];
  private startFlight: Promise<void> | undefined;
  private isStartScheduled = false;
  private bufferTimer: NodeJS.Timeout | undefined;
  /** Free slots reserved by claims in flight for the jobs they mark started (`reserveStarts`). */
  private reservedStarts = 0;

  /** Claimed jobs waiting for a slot now. */
  get depth(): number {
    return this.buffer.length + this.bounded.length;
  }

  /** The prefetch in force (jobs held ahead of free slots at most). */
  get prefetchLimit(): number {
    return this.prefetchNow;
  }

  constructor(
    private readonly slots: Slots,
    private readonly db: pg.Pool,
    private readonly logger: Logger,
    private readonly options: PrefetchOptions,
  ) {
    this.fixedPrefetch = options.prefetch === undefined ? undefined : Math.max(0, options.prefetch);
    this.prefetchNow = this.fixedPrefetch ?? slots.concurrency;
  }

  /** How many more jobs this worker may hold: free slots plus the prefetch, minus the buffer. */
  room(): number {
    return this.slots.concurrency + this.prefetchNow - this.slots.size - this.depth;
  }

  /** Free slots no buffered job is waiting for and no claim in flight has reserved: what a claim may start at once. */
  startable(): number {
    return Math.max(0, this.slots.concurrency - this.slots.size - this.depth - this.reservedStarts);
  }

  /**
   * Reserves the slots a claim in flight may mark started (`startable()` of them, at most `max`),
   * so that two claims in flight at once — the claim loop's and an ack's hand-over — never start
   * more jobs than there are free slots. Release with `releaseStarts` once the claim's jobs were
   * accepted (or the claim failed).
   */
  reserveStarts(max = Number.POSITIVE_INFINITY): number {
    const n = Math.min(max, this.startable());
    this.reservedStarts += n;
    return n;
  }

  releaseStarts(n: number): void {
    this.reservedStarts -= n;
  }

  /**
   * Takes a claim's jobs: those it started run at once, the prefetched rest wait for slots — those
   * `isBounded` says ran into a limit of the claim (their room is used up while work waits) first.
   */
  accept(jobs: ClaimedJob[], isBounded?: (job: ClaimedJob) => boolean): void {
    const at = Date.now();
    for (const job of jobs) {
      if (job.isStarted) this.launch(job);
      else if (isBounded?.(job)) this.bounded.push({ job, at });
      else this.buffer.push({ job, at });
    }
    this.pump();
  }

  /** Starts buffered jobs while slots are free; their start marks follow in one statement (`scheduleStarts`). */
  pump(): void {
    const hadBuffer = this.depth > 0;
    while (this.slots.size < this.slots.concurrency && this.depth > 0) {
      const { job } = (this.bounded.length > 0 ? this.bounded : this.buffer).shift()!;
      this.starting.push(job);
      this.launch(job);
    }
    this.scheduleStarts();
    const ceiling = this.prefetchCeiling();
    if (this.prefetchNow > ceiling) {
      this.prefetchNow = ceiling;
    } else if (hadBuffer && this.depth === 0 && this.prefetchNow < ceiling) {
      // The buffer ran dry in time: double towards the ceiling (halved on hand-back, below).
      this.prefetchNow = Math.min(ceiling, Math.max(this.prefetchNow * 2, 1));
    }
    if (this.depth > 0) this.bufferTimer ??= setTimeout(() => void this.expireBuffer(), this.options.maxBufferMs);
  }

  /** Drain: hands every buffered job back (READY, attempt not burned). */
  async handBackAll(): Promise<void> {
    clearTimeout(this.bufferTimer);
    const buffered = [...this.bounded.splice(0), ...this.buffer.splice(0)].map((b) => b.job);
    if (buffered.length > 0) await this.handBack(buffered);
  }

  /** Hands these claimed jobs back at once (READY, attempt not burned): jobs that arrived during a drain. */
  handBackNow(jobs: ClaimedJob[]): Promise<void> {
    return this.handBack(jobs);
  }

  private launch(job: ClaimedJob): void {
    this.started += 1;
    this.slots.launch(job);
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
    return Math.min(this.options.max, Math.max(this.slots.concurrency, Math.round(this.startRate * this.options.windowMs)));
  }

  /**
   * A buffered job must not wait long on a busy worker while others could run it (its lease is
   * ticking and is not heartbeated until it starts): past `maxBufferMs` it is handed back.
   */
  private async expireBuffer(): Promise<void> {
    this.bufferTimer = undefined;
    const cutoff = Date.now() - this.options.maxBufferMs;
    const stale: ClaimedJob[] = [];
    for (const queue of [this.bounded, this.buffer]) while (queue.length > 0 && queue[0]!.at <= cutoff) stale.push(queue.shift()!.job);
    if (stale.length > 0) {
      // Slots are busy with long work: prefetching only moves jobs back and forth. Back off.
      this.prefetchNow = Math.floor(this.prefetchNow / 2);
      await this.handBack(stale);
    }
    if (this.depth > 0) this.bufferTimer = setTimeout(() => void this.expireBuffer(), this.options.maxBufferMs);
  }

  private async handBack(jobs: ClaimedJob[]): Promise<void> {
    try {
      await handBackJobs(
        this.db,
        jobs.map((j) => ({ id: j.id, leaseToken: j.leaseToken, attempt: j.attempt })),
      );
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
      // An attempt that already ended (a short handler, done before this turn) is left out: its
      // result is buffered or being written, and a start mark written beside its ack could
      // deadlock with it (below).
      const batch = this.starting.splice(0).filter((j) => {
        const attempt = this.slots.get(j.id);
        return attempt !== undefined && attempt.job.leaseToken === j.leaseToken && attempt.isOpen;
      });
      if (batch.length === 0) return;
      this.startFlight = this.markStarted(batch).finally(() => {
        this.startFlight = undefined;
        this.scheduleStarts();
      });
    });
  }

  /**
   * Resolves once no start-mark statement is in flight. The completer writes acks and failures only
   * then (and a start mark leaves out attempts already ended), so a start mark and an ack or a
   * failure never hold rows of the same jobs at once: each locks its rows in its own plan's order
   * (a hash join over the RUNNING rows), and two of them sharing two jobs deadlocked (measured: a
   * few per thousand jobs in bench (g), 1 s each — deadlock_timeout — with the batch retried).
   */
  async startsLanded(): Promise<void> {
    while (this.startFlight) await this.startFlight;
  }

  private async markStarted(batch: ClaimedJob[]): Promise<void> {
    for (let failures = 1; ; failures++) {
      try {
        const { lost } = await startJobs(
          this.db,
          batch.map((j) => ({ id: j.id, leaseToken: j.leaseToken, attempt: j.attempt })),
        );
        // Lost: rescued, re-claimed or finished meanwhile (an attempt may even have been acked
        // already: closed, so this is a no-op for it).
        const byId = new Map(batch.map((j) => [j.id, j]));
        for (const id of lost) {
          const attempt = this.slots.get(id);
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
}
