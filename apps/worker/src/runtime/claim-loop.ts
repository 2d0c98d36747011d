import { ROOT_CONTEXT, SpanKind } from "@opentelemetry/api";
import { boundScopesOf, type ClaimedJob, claimBatch, endSpanWithError, porterTracer } from "@porter/core";
import { PinnedConnection } from "@porter/db/pool";
import type pg from "pg";
import type { Logger } from "../logger";
import type { PrefetchBuffer } from "./prefetch-buffer";
import type { Slots } from "./slots";
import { jitter, sleep, Waker } from "./waker";
import type { WorkerProbe } from "./worker-probe";

export type ClaimLoopOptions = {
  db: pg.Pool;
  poolId: string;
  workerId: string;
  logger: Logger;
  /** Whether the LISTEN connection is up (the poll is faster while it is not). */
  isListening: () => boolean;
  /** When fewer than a quarter of the slots are free, wait this long for more before claiming. */
  claimGatherMs: number;
  /** Poll fallback while the listener is connected (jittered). */
  pollIntervalMs: number;
  /** Poll interval while the listener is disconnected. */
  disconnectedPollIntervalMs: number;
  /** Coalescing window for notifications on a busy worker (see `WorkerOptions.notifyDebounceMs`). */
  notifyDebounceMs: number;
  /** After a claim that took jobs (committed): wakes the live status stream. */
  onClaimed?: () => void;
  /** Counts claims and their batch sizes (in memory; the worker's metrics). */
  probe?: WorkerProbe;
};

/**
 * The claim loop and its wake-ups. Claims while there is room (free slots plus the prefetch) and
 * reason to expect work: at start, after a full batch (claim again at once), on a notification for
 * this pool (at once when idle, debounced when busy: see `onReady`), when a scheduled retry comes
 * due (`wakeAt`), when a result written freed room under a limit that bounded the last claim
 * (`onResultWritten`), after a short claim when results are written (`onWritten`), and on the
 * jittered poll fallback (faster while the listener is disconnected). `stop` ends it (the drain).
 */
export class ClaimLoop {
  private readonly waker = new Waker();
  private readonly lowWater: number;
  private isStopped = false;
  private isMoreLikely = true;
  /** The last claim got some jobs but fewer than asked, and named no bound: work may be waiting behind a limit. */
  private isClaimShort = false;
  /**
   * The limits that bounded the last claim with work left behind (`queue:<id>`, `pool:<id>`,
   * `tenant:<id>`, `resource_key:<id>`; core's `ClaimBound`): a result of ours written under one of
   * them freed room no notification announces, so it triggers a claim.
   */
  private bounds: ReadonlySet<string> = new Set();
  /**
   * Per queue, the rooms the completer's acks handed to the queue's next jobs (`onHandedOver`) and
   * that no result written since has accounted for: a result of that queue takes one and prompts
   * no claim (its room is taken). Cleared by each claim.
   */
  private readonly handedOver = new Map<string, number>();
  /** Jobs whose results were written while a claim ran: checked against that claim's bounds. */
  private writtenDuringClaim: ClaimedJob[] = [];
  private isClaimRunning = false;
  /**
   * A claim is running, or the loop has just been woken to run one: a notification now is
   * coalesced (debounced) rather than answered with a claim of its own.
   */
  private isClaiming = false;
  /** Counts nudges (work may be waiting): one that comes while a claim runs must not be lost. */
  private nudges = 0;
  private done: Promise<void> = Promise.resolve();
  private debounceTimer: NodeJS.Timeout | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  private retryTimerAt = Infinity;
  /** The claim's own session (one claim at a time): its plans stay warm (`PinnedConnection`). */
  private readonly connection: PinnedConnection;

  constructor(
    private readonly slots: Slots,
    private readonly buffer: PrefetchBuffer,
    private readonly options: ClaimLoopOptions,
  ) {
    this.lowWater = Math.max(1, Math.floor(slots.concurrency / 4));
    this.connection = new PinnedConnection(options.db);
  }

  /** True once `stop` was called: no claim starts any more. */
  get isStopping(): boolean {
    return this.isStopped;
  }

  start(): void {
    this.done = this.run();
  }

  /** Stops claiming; resolves when the claim under way (if any) has returned its jobs to the buffer. */
  stop(): Promise<void> {
    this.isStopped = true;
    this.waker.wake();
    return this.done;
  }

  /** Clears the wake-up timers (shutdown). */
  clearTimers(): void {
    clearTimeout(this.debounceTimer);
    clearTimeout(this.retryTimer);
  }

  /** Returns the claim's connection to the pool (shutdown; a later claim uses the pool's connections). */
  releaseConnection(): void {
    this.connection.release();
  }

  /** There may be work: claim as soon as a slot is free. */
  nudge(): void {
    this.nudges += 1;
    this.isMoreLikely = true;
    this.waker.wake();
  }

  /** A slot was freed (and refilled from the buffer): claim again if more work is likely. */
  onSlotFreed(): void {
    if (this.isMoreLikely) this.waker.wake();
  }

  /**
   * Results were written. A claim cut short by a cap (tenant, queue, pool, resource key) leaves
   * work behind that no notification announces; results just written freed capacity: claim again
   * now, not at the poll.
   */
  onWritten(): void {
    if (this.isClaimShort) this.nudge();
  }

  /**
   * One of our jobs' results was written (its RUNNING row is gone). When it ran under a limit that
   * bounded the last claim — a capped queue at its cap, say, even a claim cut to zero rows — its
   * room is free now: claim again. Results of other queues do not wake the loop (a re-claim after
   * every write would cost a claim per flush).
   */
  onResultWritten(job: ClaimedJob): void {
    const handed = this.handedOver.get(job.queueId);
    if (handed !== undefined) {
      // Its room went to the queue's next job in the ack's own statement (`onHandedOver`).
      if (handed <= 1) this.handedOver.delete(job.queueId);
      else this.handedOver.set(job.queueId, handed - 1);
      return;
    }
    if (this.isClaimRunning) {
      if (this.writtenDuringClaim.length < 1000) this.writtenDuringClaim.push(job);
      return;
    }
    if (this.isBoundBy(job)) this.nudge();
  }

  /**
   * The capped queues whose room bounded the last claim (`queue:<id>` bounds): the acks of their
   * jobs hand the room to the queue's next jobs (the completer's `handover`). None while stopping.
   */
  handoverQueues(): string[] {
    if (this.isStopped || this.bounds.size === 0) return [];
    const queues: string[] = [];
    for (const bound of this.bounds) if (bound.startsWith("queue:")) queues.push(bound.slice("queue:".length));
    return queues;
  }

  /** Whether the acks of this queue's jobs hand its room over now (`handoverQueues` names it). */
  isHandoverQueue(queueId: string): boolean {
    return this.bounds.size > 0 && !this.isStopped && this.bounds.has(`queue:${queueId}`);
  }

  /**
   * An ack write handed the room of finished jobs to these jobs of their queues: they go into the
   * buffer like a claim's (bounded first), and the results that freed the room prompt no claim.
   */
  onHandedOver(jobs: ClaimedJob[]): void {
    for (const job of jobs) this.handedOver.set(job.queueId, (this.handedOver.get(job.queueId) ?? 0) + 1);
    this.options.onClaimed?.();
    this.buffer.accept(jobs, (job) => this.isBoundBy(job));
  }

  /**
   * The job ran into a limit that bounded the last claim (its room used up, work waiting behind
   * it): while it waits in the prefetch buffer it holds that room, so the buffer starts it first.
   */
  isBoundBy(job: ClaimedJob): boolean {
    return this.bounds.size > 0 && boundScopesOf(job, this.options.poolId).some((scope) => this.bounds.has(scope));
  }

  /**
   * Work became ready in this pool. An idle worker claims at once: the job is committed (the
   * notification is sent at commit), so a claim started now finds it. A busy one — a claim under
   * way, every slot taken, or a window already open — coalesces notifications for
   * `notifyDebounceMs` into one claim.
   */
  onReady(): void {
    if (this.debounceTimer === undefined && !this.isClaiming && this.slots.size < this.slots.concurrency) {
      // Marked before the loop runs, so the rest of a burst delivered in the same read is coalesced.
      this.isClaiming = true;
      this.nudge();
      return;
    }
    this.debounceTimer ??= setTimeout(() => {
      this.debounceTimer = undefined;
      this.nudge();
    }, this.options.notifyDebounceMs);
  }

  /** A retry of ours becomes claimable at `at`: wake then rather than at the next poll. */
  wakeAt(at: number): void {
    if (this.isStopped) return;
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

  private async run(): Promise<void> {
    const { poolId, workerId, logger } = this.options;
    let errors = 0;
    while (!this.isStopped) {
      let free = this.buffer.room();
      if (free > 0 && this.isMoreLikely) {
        this.isClaiming = true;
        if (free < this.lowWater && this.slots.size > 0) {
          // A claim costs about the same for 1 job as for 100: when only a few slots are free and
          // others are about to be, gather them for a moment instead of claiming one by one.
          await sleep(this.options.claimGatherMs);
          if (this.isStopped) {
            this.isClaiming = false;
            break;
          }
          free = this.buffer.room();
        }
        let jobs: ClaimedJob[];
        let claimHasMore = false;
        // Free slots reserved for the jobs this claim marks started (released once they are accepted).
        let start = 0;
        const claimStartedAt = performance.now();
        const nudgesBefore = this.nudges;
        // One `porter.claim` span per claim statement that claimed work or failed (a root: a batch
        // serves many traces); an idle poll records none, so an idle worker fills no trace store.
        const claimStartedAtEpoch = Date.now();
        const claimSpan = () =>
          porterTracer().startSpan(
            "porter.claim",
            {
              kind: SpanKind.CLIENT,
              startTime: claimStartedAtEpoch,
              attributes: { "porter.pool": poolId, "porter.worker_id": workerId, "porter.claim.limit": free },
            },
            ROOT_CONTEXT,
          );
        try {
          // The jobs for free slots start at once and are marked started by the claim itself; the
          // prefetched rest are marked when they leave the buffer (PrefetchBuffer.pump).
          this.isClaimRunning = true;
          this.writtenDuringClaim = [];
          start = this.buffer.reserveStarts();
          const claimStart = start;
          const claim = await this.connection.run((client) => claimBatch(client, { poolId, workerId, limit: free, start: claimStart }));
          jobs = claim.jobs;
          claimHasMore = claim.hasMore;
          this.bounds = new Set(claim.bounds);
          this.handedOver.clear();
          if (jobs.length > 0) {
            const span = claimSpan();
            span.setAttribute("porter.claim.count", jobs.length);
            span.end();
          }
          errors = 0;
          logger.trace("claimed", { n: jobs.length, limit: free, ms: Math.round(performance.now() - claimStartedAt) });
        } catch (error) {
          this.buffer.releaseStarts(start);
          this.isClaimRunning = false;
          endSpanWithError(claimSpan(), error, "CLAIM_FAILED");
          errors += 1;
          const retryInMs = jitter(Math.min(250 * 2 ** errors, 5000));
          logger.warn("claim failed; retrying", { err: error, retryInMs });
          this.isClaiming = false;
          await this.waker.wait(retryInMs);
          continue;
        }
        this.isClaiming = false;
        this.isClaimRunning = false;
        // A result written while the claim ran may have freed room the claim's snapshot did not see.
        const isFreedDuringClaim = this.writtenDuringClaim.some((job) => this.isBoundBy(job));
        this.writtenDuringClaim = [];
        this.options.probe?.onClaim(jobs.length, (performance.now() - claimStartedAt) / 1000);
        if (jobs.length > 0) this.options.onClaimed?.();
        if (this.isStopped && jobs.length > 0) logger.info("claimed while draining; these run within the grace", { n: jobs.length });
        this.buffer.releaseStarts(start);
        this.buffer.accept(jobs, (job) => this.isBoundBy(job));
        // A short claim means the queue is empty for now — unless the tenants' shares cut it
        // (`hasMore`), or work was announced while it ran (its NOTIFY may have come after the
        // claim's snapshot): then claim again.
        this.isMoreLikely = jobs.length === free || claimHasMore || this.nudges !== nudgesBefore || isFreedDuringClaim;
        // A claim that names its bounds is woken by results under them (`onResultWritten`); one cut
        // short without a bound (a start rate's tokens, or the queue ran dry) claims once more after
        // the next write.
        this.isClaimShort = jobs.length > 0 && jobs.length < free && this.bounds.size === 0;
        if (this.isMoreLikely && this.buffer.room() > 0) continue;
      }
      const pollMs = this.options.isListening() ? jitter(this.options.pollIntervalMs, 0.2) : this.options.disconnectedPollIntervalMs;
      const isWoken = await this.waker.wait(pollMs);
      if (!isWoken) this.isMoreLikely = true;
    }
  }
}
