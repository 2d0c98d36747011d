import { extendLeases } from "@porter/core";
import type pg from "pg";
import type { Logger } from "../logger";
import type { Attempt } from "./attempt";
import type { WorkerProbe } from "./worker-probe";

/**
 * Heartbeats for a whole process: one batched `extendLeases` for every open attempt whenever one
 * of them is due (each is due a third of its queue's lease after the last extension), so a worker
 * running hundreds of jobs sends one statement every few seconds, not hundreds. A lease the
 * database no longer holds aborts that attempt and discards its result; a cancel request aborts
 * the handler's signal with a CancelledError.
 *
 * Progress (`ctx.progress`) rides in the same batch: each attempt's progress reported since its
 * last heartbeat goes with its lease, and a report makes that attempt due within PROGRESS_FLUSH_MS
 * of its last extension — no statement per report, at most one batch a second while progress
 * changes. A report that a failed batch did not carry stays pending for the next one.
 */
export class LeaseKeeper {
  private timer: NodeJS.Timeout | undefined;
  private isBusy = false;
  private retryAt = 0;

  constructor(
    private readonly db: pg.Pool,
    private readonly logger: Logger,
    private readonly attempts: () => Iterable<Attempt>,
    private readonly tickMs = 250,
    /** After a heartbeat batch that carried progress (committed): wakes the live status stream. */
    private readonly onProgressWritten?: () => void,
    /** Counts heartbeat batches (in memory; the worker's metrics). */
    private readonly probe?: WorkerProbe,
  ) {}

  start(): void {
    this.timer ??= setInterval(() => void this.tick(), this.tickMs);
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Extends these attempts' leases now and applies what the database reports (lost leases, cancel requests). */
  async extend(attempts: Attempt[]): Promise<void> {
    const open = attempts.filter((a) => a.isOpen);
    if (open.length === 0) return;
    const sent = open.map((a) => a.pendingProgress);
    const outcome = await extendLeases(
      this.db,
      open.map((a, i) => ({ ...a.ref, progress: sent[i] ?? null })),
    );
    this.probe?.onHeartbeat(open.length);
    if (sent.some((p) => p != null)) this.onProgressWritten?.();
    const byId = new Map(open.map((a, i) => [a.job.id, { attempt: a, progress: sent[i] }]));
    const now = Date.now();
    for (const extended of outcome.extended) {
      const entry = byId.get(extended.id);
      if (!entry) continue;
      const { attempt } = entry;
      // A report made while the batch was in flight stays pending.
      if (attempt.pendingProgress === entry.progress) attempt.pendingProgress = undefined;
      attempt.lastExtendedAt = now;
      attempt.heartbeatDueAt = now + (attempt.job.leaseSeconds * 1000) / 3;
      if (extended.cancelRequested) attempt.requestCancel();
    }
    for (const id of outcome.lost) byId.get(id)?.attempt.loseLease();
  }

  private async tick(): Promise<void> {
    const now = Date.now();
    if (this.isBusy || now < this.retryAt) return;
    const open = [...this.attempts()].filter((a) => a.isOpen);
    if (!open.some((a) => a.heartbeatDueAt <= now)) return;
    this.isBusy = true;
    try {
      await this.extend(open);
    } catch (error) {
      this.retryAt = Date.now() + 1000;
      this.logger.warn("heartbeat failed; retrying in 1 s", { err: error, leases: open.length });
    } finally {
      this.isBusy = false;
    }
  }
}
