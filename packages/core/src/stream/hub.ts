import pg from "pg";
import type { Db } from "../db";
import {
  compareCursor,
  currentJobRow,
  cursorRetained,
  formatCursor,
  readStream,
  STREAM_PAGE,
  type StreamCursor,
  type StreamRow,
  streamHead,
  streamHeldBack,
  ZERO_CURSOR,
} from "./log";
import { STREAM_CHANNEL } from "./notifier";

/** What a subscriber may see: one tenant, the job types of its credential (null: all), optionally one job. */
export type StreamScope = { tenantId: string; jobTypes: readonly string[] | null; jobId?: string };

export type StreamHubOptions = {
  /** Reads (one query per wake for all subscribers, replays, snapshots). */
  pool: pg.Pool;
  /** The dedicated LISTEN connection's settings (application_name is set to `porter-stream`). */
  listen: pg.ClientConfig;
  /** Backstop poll while there are subscribers. Default 2000 ms. */
  pollMs?: number;
  /** Wake-ups within this many ms fold into one read. Default 50 ms. */
  debounceMs?: number;
  /** Reconnect backoff of the listener: first and longest wait. Default 100 ms … 5 s. */
  reconnectMs?: { min: number; max: number };
  /** Called with errors the hub recovers from (a dropped listener, a failed read). */
  onError?: (error: unknown) => void;
};

export type StreamDelivery = {
  /** An event in scope (`id` overrides the row's cursor: the snapshot's id). */
  onEvent: (row: StreamRow, id?: string) => void;
  /** The resume cursor was older than the log keeps: intermediate events are lost, a snapshot follows. */
  onReset?: () => void;
};

type Subscriber = StreamDelivery & {
  scope: StreamScope;
  after: StreamCursor;
  types: ReadonlySet<string> | null;
};

export type StreamSubscription = { close: () => void };

/** Live jobs a reset re-sends at most (a tenant scope's snapshot). */
export const RESET_SNAPSHOT_LIMIT = 1000;
export const STREAM_APPLICATION_NAME = "porter-stream";

const inScope = (s: Subscriber, row: StreamRow): boolean =>
  row.tenantId === s.scope.tenantId && (s.types === null || s.types.has(row.jobType)) && (s.scope.jobId === undefined || s.scope.jobId === row.jobId);

/**
 * One listener per process for the live status stream (issue 13). Framework-free: the API's SSE
 * handler subscribes per request. Started lazily by the first subscriber, stopped when the last
 * leaves. It holds ONE dedicated connection (`LISTEN porter_stream`, application_name
 * `porter-stream`), reconnecting with backoff if it drops (a read catches up after), and on a
 * wake-up (debounced) or the backstop poll runs ONE read of the log for all subscribers from the
 * hub's cursor, fanning rows out in memory by scope. All reads, replays and subscriptions run one
 * at a time on one chain, so a resuming subscriber's replay ends exactly at the hub's cursor and
 * the live fan-out continues after it: no gap, no duplicate.
 */
export class StreamHub {
  private readonly subscribers = new Set<Subscriber>();
  private chain: Promise<unknown> = Promise.resolve();
  private cursor: StreamCursor | null = null;
  private listener: pg.Client | null = null;
  private running = false;
  private pollTimer: NodeJS.Timeout | null = null;
  private wakeTimer: NodeJS.Timeout | null = null;
  private reconnectTimer: NodeJS.Timeout | null = null;
  private backoff: number;
  private heldBackMs = 0;
  /** The server's start time as the listener last saw it (`pg_postmaster_start_time()`); null while stopped. */
  private serverStartedAt: string | null = null;
  private readonly pollMs: number;
  private readonly debounceMs: number;
  private readonly reconnect: { min: number; max: number };
  /** Reads of the log (tests: one per wake, whatever the number of subscribers). */
  reads = 0;
  /** Resets of every subscriber after a server restart (tests). */
  resets = 0;

  constructor(private readonly options: StreamHubOptions) {
    this.pollMs = options.pollMs ?? 2000;
    this.debounceMs = options.debounceMs ?? 50;
    this.reconnect = options.reconnectMs ?? { min: 100, max: 5000 };
    this.backoff = this.reconnect.min;
  }

  get size(): number {
    return this.subscribers.size;
  }

  /** The hub's position (null while stopped). */
  get head(): StreamCursor | null {
    return this.cursor;
  }

  /**
   * Subscribes. With `lastEventId`: replays the tenant's events after it (or, when the log no
   * longer holds it, `onReset` and a snapshot), then live events. Without: for a `jobId` scope the
   * job's current state as one event (its id the hub's cursor), then live events; for a tenant
   * scope only new events. Resolves once the subscriber is live.
   */
  subscribe(scope: StreamScope, delivery: StreamDelivery & { lastEventId?: StreamCursor }): Promise<StreamSubscription> {
    const sub: Subscriber = {
      scope,
      onEvent: delivery.onEvent,
      onReset: delivery.onReset,
      after: ZERO_CURSOR,
      types: scope.jobTypes === null ? null : new Set(scope.jobTypes),
    };
    let closed = false;
    const close = () => {
      if (closed) return;
      closed = true;
      this.subscribers.delete(sub);
      this.enqueue(async () => {
        if (this.subscribers.size === 0) await this.stop();
      });
    };
    return this.enqueue(async () => {
      await this.start();
      const head = this.cursor!;
      sub.after = head;
      const db = this.options.pool;
      if (delivery.lastEventId) {
        if (await cursorRetained(db, delivery.lastEventId)) {
          if (compareCursor(delivery.lastEventId, head) < 0) await this.replay(sub, delivery.lastEventId, head);
          else sub.after = delivery.lastEventId; // another process's hub is ahead: skip what it already sent
        } else {
          sub.onReset?.();
          await this.snapshot(db, sub, head, true);
        }
      } else if (scope.jobId) {
        await this.snapshot(db, sub, head, false);
      }
      if (!closed) this.subscribers.add(sub);
      return { close };
    });
  }

  /** Stops the hub (tests, shutdown): subscribers get nothing more. */
  async close(): Promise<void> {
    this.subscribers.clear();
    await this.enqueue(() => this.stop());
  }

  private enqueue<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.chain.then(fn);
    this.chain = next.catch(() => {});
    return next;
  }

  private async replay(sub: Subscriber, from: StreamCursor, upTo: StreamCursor): Promise<void> {
    let after = from;
    for (;;) {
      const rows = await readStream(this.options.pool, { after, upTo, tenantId: sub.scope.tenantId });
      for (const row of rows) if (inScope(sub, row)) sub.onEvent(row);
      if (rows.length < STREAM_PAGE) return;
      after = rows[rows.length - 1]!.cursor;
    }
  }

  /** After a server restart (see `connect`): every subscriber gets `onReset` and a snapshot, as a resume past retention does. */
  private async resetAll(): Promise<void> {
    if (!this.running || !this.cursor) return;
    this.resets++;
    const head = this.cursor;
    for (const sub of [...this.subscribers]) {
      sub.onReset?.();
      await this.snapshot(this.options.pool, sub, head, true);
    }
  }

  private async snapshot(db: Db, sub: Subscriber, head: StreamCursor, allLive: boolean): Promise<void> {
    const id = formatCursor(head);
    if (sub.scope.jobId) {
      const current = await currentJobRow(db, sub.scope.jobId, head);
      if (current && inScope(sub, current.row)) {
        // The job's events up to `shownUntil` were committed when the snapshot was read, and it
        // shows their outcome: the snapshot takes that position (a client resuming from its id
        // gets exactly what follows) and the live fan-out starts after it.
        const at = current.shownUntil ?? head;
        sub.onEvent(current.row, formatCursor(at));
        sub.after = at;
      }
      return;
    }
    if (!allLive) return;
    const { rows } = await db.query<{ job_id: string }>(
      `SELECT job_id::text AS job_id FROM jobs WHERE tenant_id = $1 AND ($2::text[] IS NULL OR job_type = ANY($2)) ORDER BY id LIMIT $3`,
      [sub.scope.tenantId, sub.types ? [...sub.types] : null, RESET_SNAPSHOT_LIMIT],
    );
    for (const r of rows) {
      const current = await currentJobRow(db, r.job_id, head);
      if (current && inScope(sub, current.row)) sub.onEvent(current.row, id);
    }
  }

  private async start(): Promise<void> {
    if (this.running) return;
    // Where live delivery starts; a failure here leaves the hub stopped (the subscribe rejects).
    this.cursor = await streamHead(this.options.pool);
    this.running = true;
    this.backoff = this.reconnect.min;
    await this.connect().catch((error) => {
      this.options.onError?.(error);
      this.scheduleReconnect();
    });
    this.pollTimer = setInterval(() => this.wake(0), this.pollMs);
    this.pollTimer.unref?.();
  }

  private async stop(): Promise<void> {
    if (!this.running) return;
    this.running = false;
    this.cursor = null;
    this.serverStartedAt = null;
    for (const t of [this.pollTimer, this.wakeTimer, this.reconnectTimer]) if (t) clearTimeout(t);
    this.pollTimer = this.wakeTimer = this.reconnectTimer = null;
    const listener = this.listener;
    this.listener = null;
    if (listener) await listener.end().catch(() => {});
  }

  private async connect(): Promise<void> {
    const client = new pg.Client({ ...this.options.listen, application_name: STREAM_APPLICATION_NAME });
    const lost = (error?: unknown) => {
      if (this.listener !== client) return;
      this.listener = null;
      if (error) this.options.onError?.(error);
      client.end().catch(() => {});
      this.scheduleReconnect();
    };
    client.on("error", lost);
    client.on("end", () => lost());
    client.on("notification", () => this.wake(this.debounceMs));
    this.listener = client;
    try {
      await client.connect();
      await client.query(`LISTEN ${STREAM_CHANNEL}`);
      // The log is an unlogged table (prisma/migrations/20261202002100_job_stream_unlogged): a
      // server restart after a crash empties it, and the events not yet read are gone. A listener
      // that comes back to a server started since it last connected resets every subscriber (a
      // snapshot, as for a cursor past retention) before the next read; the hub's cursor stays,
      // later events carry higher xids.
      const { rows } = await client.query<{ t: string }>(`SELECT pg_postmaster_start_time()::text AS t`);
      const startedAt = rows[0]!.t;
      if (this.serverStartedAt !== null && this.serverStartedAt !== startedAt) {
        this.enqueue(() => this.resetAll()).catch((error) => this.options.onError?.(error));
      }
      this.serverStartedAt = startedAt;
    } catch (error) {
      if (this.listener === client) this.listener = null;
      client.removeAllListeners("end");
      client.end().catch(() => {});
      throw error;
    }
    this.backoff = this.reconnect.min;
    // Whatever committed while no one listened is read now.
    this.wake(0);
  }

  private scheduleReconnect(): void {
    if (!this.running || this.reconnectTimer) return;
    const wait = this.backoff;
    this.backoff = Math.min(this.reconnect.max, this.backoff * 2);
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = null;
      if (!this.running || this.listener) return;
      this.connect().catch((error) => {
        this.options.onError?.(error);
        this.scheduleReconnect();
      });
    }, wait);
    this.reconnectTimer.unref?.();
  }

  private wake(delayMs: number): void {
    if (!this.running || this.wakeTimer) return;
    this.wakeTimer = setTimeout(() => {
      this.wakeTimer = null;
      this.enqueue(() => this.tick()).catch((error) => this.options.onError?.(error));
    }, delayMs);
    this.wakeTimer.unref?.();
  }

  private async tick(): Promise<void> {
    if (!this.running || !this.cursor) return;
    for (;;) {
      this.reads++;
      const rows = await readStream(this.options.pool, { after: this.cursor });
      for (const row of rows) {
        for (const sub of this.subscribers) {
          if (!inScope(sub, row) || compareCursor(row.cursor, sub.after) <= 0) continue;
          try {
            sub.onEvent(row);
          } catch (error) {
            this.options.onError?.(error);
          }
        }
        this.cursor = row.cursor;
      }
      if (!this.running) return;
      if (rows.length < STREAM_PAGE) break;
    }
    // Events the read could not take yet (an open transaction holds the xmin back): their wake-up
    // has come and gone, so read again soon, backing off while it lasts.
    if (await streamHeldBack(this.options.pool, this.cursor)) {
      this.heldBackMs = Math.min(500, Math.max(20, this.heldBackMs * 2));
      this.wake(this.heldBackMs);
    } else {
      this.heldBackMs = 0;
    }
  }
}
