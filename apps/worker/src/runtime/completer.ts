import { type ClaimedJob, type Completion, completeJobs, type Failure, failJobs, type Handover } from "@porter/core";
import { PinnedConnection } from "@porter/db/pool";
import type pg from "pg";
import type { Logger } from "../logger";
import { isConnectionError } from "./errors";
import { sleep } from "./waker";
import type { WorkerProbe } from "./worker-probe";

/** How a buffered result ended: written, refused by the fence (lease no longer held), or given up. */
export type FlushResult = "applied" | "stale" | "dropped";

/** Told how a buffered result ended. */
type Done = { flushed: (result: FlushResult) => void };
/**
 * An ack's owner (its attempt): told how the ack ended, and asked for the failure to record
 * instead if the database keeps refusing the result. An object rather than a promise and two
 * closures per ack (docs/performance.md, "the worker's allocations").
 */
export type AckOwner = Done & { rejectAs: () => Failure };
type Pending<T, D extends Done = Done> = { item: T; tries: number; done: D };
type PendingAck = Pending<Completion, AckOwner>;

export type CompleterOptions = {
  logger: Logger;
  /** Longest a result waits in the buffer. Default 5 ms. */
  flushIntervalMs?: number;
  /** A buffer of this many results is written at once. Default 500. */
  maxBatch?: number;
  /** Tries before a result that a statement keeps refusing is given up (its lease then expires). Default 3. */
  maxTries?: number;
  /** Called after each write of results (their RUNNING rows are gone: capacity under caps is free again). */
  onWritten?: () => void;
  /** Counts written batches and their sizes (in memory; the worker's metrics). */
  probe?: WorkerProbe;
  /**
   * Awaited before each write: the worker's start marks in flight land first (PrefetchBuffer's
   * `startsLanded`), so an ack and a start mark never hold rows of the same jobs at once.
   */
  beforeWrite?: () => Promise<void>;
  /**
   * No other result is coming soon (no other attempt runs, none waits in the prefetch buffer): a
   * result is then written at once instead of waiting `flushIntervalMs` for others to share its
   * statement — on a quiet worker the wait bought nothing and was most of enqueue→done.
   */
  isAlone?: () => boolean;
  /**
   * This ack is written at once rather than after `flushIntervalMs`: its job's room is handed over
   * by the ack's statement (`handover`), and the queue's next job waits for that write.
   */
  isUrgent?: (item: Completion) => boolean;
  /**
   * Asked at each ack write of `acks` results: the capped queues whose room this worker's acks hand
   * to those queues' next jobs in the ack's own statement (core's `Handover`, `porter_handover`:
   * at most one job per ack), or undefined for none. The jobs handed over go to `onHandedOver`
   * before the acks' promises resolve.
   */
  handover?: (acks: number) => Handover | undefined;
  /** Takes the jobs an ack write claimed by hand-over (awaited before the write counts as done). */
  onHandedOver?: (jobs: ClaimedJob[]) => Promise<void> | void;
  /** The write that carried `handover` ended (its jobs, if any, were taken): its reserved slots are free. */
  onHandoverEnded?: (handover: Handover) => void;
};

/**
 * Buffers acks and failures and writes them in batches — one `completeJobs` and one `failJobs`
 * statement per flush — every few milliseconds or as soon as `maxBatch` accumulate. Writes are
 * serialised; results arriving during a write go out in the next one at once. A database outage
 * keeps the results and retries with backoff. When a batch is refused by a statement error, its
 * results are retried one by one so one poisoned result cannot hold the others back; an ack the
 * database refuses (a result jsonb cannot store) is turned into its permanent failure.
 */
export class Completer {
  private acks: PendingAck[] = [];
  private fails: Array<Pending<Failure>> = [];
  private timer: NodeJS.Timeout | undefined;
  private isRunning = false;
  private idleWaiters: Array<() => void> = [];
  private readonly flushIntervalMs: number;
  private readonly maxBatch: number;
  private readonly maxTries: number;
  /** The acks' own session (writes are serialised): the ack statement's plan stays warm (`PinnedConnection`). */
  private readonly ackConnection: PinnedConnection;

  constructor(
    private readonly db: pg.Pool,
    private readonly options: CompleterOptions,
  ) {
    this.flushIntervalMs = options.flushIntervalMs ?? 5;
    this.maxBatch = options.maxBatch ?? 500;
    this.maxTries = options.maxTries ?? 3;
    this.ackConnection = new PinnedConnection(db);
  }

  /** Returns the acks' connection to the pool (shutdown; a later write uses the pool's connections). */
  releaseConnection(): void {
    this.ackConnection.release();
  }

  /** Results buffered or being written. */
  get pending(): number {
    return this.acks.length + this.fails.length + (this.isRunning ? 1 : 0);
  }

  /** Buffers an ack; `owner.flushed` is told how it ended (`owner.rejectAs` gives the failure to record instead if the database refuses the result). */
  ack(item: Completion, owner: AckOwner): void {
    this.acks.push({ item, tries: 0, done: owner });
    this.schedule(this.options.isUrgent?.(item) ?? false);
  }

  /** Buffers a failure (retry, dead, cancelled, expired — decided by the caller). */
  fail(item: Failure): Promise<FlushResult> {
    return new Promise((resolve) => {
      this.fails.push({ item, tries: 0, done: { flushed: resolve } });
      this.schedule();
    });
  }

  /** Writes everything buffered now and resolves when the buffer is empty (or `timeoutMs` passed: false). */
  async flush(timeoutMs = 30_000): Promise<boolean> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.acks.length + this.fails.length === 0 && !this.isRunning) return true;
    const idle = new Promise<true>((resolve) => this.idleWaiters.push(() => resolve(true)));
    void this.pump();
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), timeoutMs)));
    const result = await Promise.race([idle, timedOut]);
    clearTimeout(timer);
    return result;
  }

  private schedule(isUrgent = false): void {
    if (this.isRunning) return; // the running pump picks it up
    if (isUrgent || this.acks.length + this.fails.length >= this.maxBatch || this.options.isAlone?.()) {
      if (this.timer) clearTimeout(this.timer);
      this.timer = undefined;
      void this.pump();
    } else if (!this.timer) {
      this.timer = setTimeout(() => {
        this.timer = undefined;
        void this.pump();
      }, this.flushIntervalMs);
    }
  }

  private async pump(): Promise<void> {
    if (this.isRunning) return;
    this.isRunning = true;
    let outage = 0;
    try {
      while (this.acks.length + this.fails.length > 0) {
        if (this.options.beforeWrite) await this.options.beforeWrite();
        // Taken right after (no await between): a start mark sent from here on leaves these out.
        const acks = this.acks.splice(0, this.maxBatch);
        const fails = this.fails.splice(0, this.maxBatch);
        const outcomes = await Promise.all([
          this.writeGroup(
            acks,
            (items) => this.writeAcks(items),
            (items, isCountingTry) => this.requeueAcks(items, isCountingTry),
          ),
          this.writeGroup(
            fails,
            (items) => failJobs(this.db, items).then((r) => this.written("fail", items.length, r.stale)),
            (items, isCountingTry) => this.requeueFails(items, isCountingTry),
          ),
        ]);
        if (outcomes.includes("outage")) {
          outage += 1;
          await sleep(Math.min(100 * 2 ** outage, 2000));
        } else {
          outage = 0;
          this.options.onWritten?.();
        }
      }
    } finally {
      this.isRunning = false;
      const waiters = this.idleWaiters;
      this.idleWaiters = [];
      for (const waiter of waiters) waiter();
    }
  }

  /** One ack statement, with the hand-over when the worker asks for one; returns the stale ids. */
  private async writeAcks(items: Completion[]): Promise<string[]> {
    const handover = this.options.handover?.(items.length);
    try {
      const outcome = await this.ackConnection.run((client) => completeJobs(client, items, undefined, handover));
      if (outcome.handedOver.length > 0) await this.options.onHandedOver?.(outcome.handedOver);
      return this.written("ack", items.length, outcome.stale);
    } finally {
      if (handover) this.options.onHandoverEnded?.(handover);
    }
  }

  private written(kind: "ack" | "fail", rows: number, stale: string[]): string[] {
    this.options.probe?.onWrite(kind, rows);
    return stale;
  }

  /**
   * Writes one group (acks or failures) in one statement. A connection error keeps the group for
   * the next round; a statement error on a batch retries its results one by one, so one poisoned
   * result cannot hold the others back.
   */
  private async writeGroup<P extends Pending<Completion | Failure, Done>>(
    group: P[],
    write: (items: Array<P["item"]>) => Promise<string[]>,
    requeue: (items: P[], isCountingTry: boolean) => void,
  ): Promise<"ok" | "outage"> {
    if (group.length === 0) return "ok";
    const attempt = async (items: P[]) => {
      const stale = new Set(await write(items.map((p) => p.item)));
      if (stale.size > 0) {
        this.options.logger.warn("results refused: the lease is no longer held by this worker", { jobRowIds: [...stale] });
      }
      for (const p of items) p.done.flushed(stale.has(p.item.id) ? "stale" : "applied");
    };
    try {
      await attempt(group);
      return "ok";
    } catch (error) {
      if (isConnectionError(error) || group.length === 1) {
        this.options.logger.warn("could not record results; retrying", { err: error, results: group.length });
        requeue(group, !isConnectionError(error));
        return "outage";
      }
      for (const one of group) {
        try {
          await attempt([one]);
        } catch (oneError) {
          this.options.logger.warn("could not record a result; retrying", { err: oneError, jobRowId: one.item.id });
          requeue([one], !isConnectionError(oneError));
        }
      }
      return "ok";
    }
  }

  /** Puts acks back at the front; an ack the database keeps refusing becomes its permanent failure. */
  private requeueAcks(acks: PendingAck[], isCountingTry: boolean): void {
    const kept: PendingAck[] = [];
    for (const ack of acks) {
      if (isCountingTry && ++ack.tries >= this.maxTries) {
        this.options.logger.error("the database refuses this result; recording a permanent failure instead", { jobRowId: ack.item.id });
        this.fails.unshift({ item: ack.done.rejectAs(), tries: 0, done: ack.done });
      } else {
        kept.push(ack);
      }
    }
    this.acks.unshift(...kept);
  }

  /** Puts failures back at the front; one the database keeps refusing is given up (its lease expires). */
  private requeueFails(fails: Array<Pending<Failure>>, isCountingTry: boolean): void {
    const kept: Array<Pending<Failure>> = [];
    for (const fail of fails) {
      if (isCountingTry && ++fail.tries >= this.maxTries) {
        this.options.logger.error("gave up recording a failure; the job runs again once its lease expires", { jobRowId: fail.item.id });
        fail.done.flushed("dropped");
      } else {
        kept.push(fail);
      }
    }
    this.fails.unshift(...kept);
  }
}
