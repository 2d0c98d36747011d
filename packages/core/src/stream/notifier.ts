import type pg from "pg";

/** The channel the status stream's readers LISTEN on. */
export const STREAM_CHANNEL = "porter_stream";
/** A process sends at most one wake-up per this many ms. */
export const STREAM_NOTIFY_INTERVAL_MS = 100;

/**
 * Wakes the status stream's readers after a write committed (issue 13). Writers call `touch()`
 * AFTER their commit; it sends `SELECT pg_notify('porter_stream', '')` on a pool connection as its
 * own autocommit statement (never inside a writer's transaction, never in a trigger), at most once
 * per {@link STREAM_NOTIFY_INTERVAL_MS} per process: touches in between fold into one trailing
 * notify. A lost wake-up (a failed notify, a writer that crashed after its commit, a psql write)
 * costs latency only: readers poll as a backstop. Errors are swallowed.
 */
export class StreamNotifier {
  private last = 0;
  private timer: NodeJS.Timeout | null = null;
  private closed = false;
  /** Notifies sent (tests, metrics). */
  sent = 0;

  constructor(
    private readonly pool: pg.Pool,
    private readonly intervalMs = STREAM_NOTIFY_INTERVAL_MS,
  ) {}

  touch(): void {
    if (this.closed || this.timer) return;
    const wait = Math.max(0, this.last + this.intervalMs - Date.now());
    this.timer = setTimeout(() => {
      this.timer = null;
      this.last = Date.now();
      this.sent++;
      this.pool.query(`SELECT pg_notify($1, '')`, [STREAM_CHANNEL]).catch(() => {});
    }, wait);
    this.timer.unref?.();
  }

  /** Stops sending (a pending wake-up is dropped; readers' backstop covers it). */
  close(): void {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }
}
