import type pg from "pg";

/** The channel the status stream's readers LISTEN on. */
export const STREAM_CHANNEL = "porter_stream";
/** A process sends at most one wake-up per this many ms. */
export const STREAM_NOTIFY_INTERVAL_MS = 100;

/**
 * The wake-up: `pg_notify` in a transaction of its own that commits asynchronously
 * (`set_config(…, true)`: for this transaction only, the pool's session keeps its setting). A
 * notifying transaction holds PostgreSQL's notify lock (one for the whole cluster, taken at commit)
 * through its commit, and every other notifying commit — a producer's enqueue with its
 * `porter_ready` NOTIFY among them — waits for it; with the server's synchronous commit that hold
 * included a WAL flush. A wake-up needs no durability (a lost one costs latency only), so it does
 * not wait for the flush (docs/performance.md "Issue 15: idle latency (e)").
 */
export const STREAM_NOTIFY_SQL = `SELECT set_config('synchronous_commit', 'off', true), pg_notify($1, '')`;

/**
 * Wakes the status stream's readers after a write committed (issue 13). Writers call `touch()`
 * AFTER their commit; it sends `pg_notify('porter_stream', '')` on a pool connection as its
 * own autocommit statement, committed asynchronously ({@link STREAM_NOTIFY_SQL}) (never inside a writer's transaction, never in a trigger), at most once
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
      this.pool.query(STREAM_NOTIFY_SQL, [STREAM_CHANNEL]).catch(() => {});
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
