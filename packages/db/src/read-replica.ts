import type pg from "pg";

// Replica reads (issue 16, deliverable 4; docs/scaling.md "Replica reads"): which pool a read that
// may be a little stale runs on. The replica serves it when it is up, its replay is within
// `maxLagS` of the primary, and it has replayed the caller's last write (the primary's WAL position
// after that write, which the caller remembers: a cookie of the console session); otherwise the
// primary does. Nothing here ever fails a read because of the replica: a probe that fails marks
// it down, and {@link ReadReplica.run} retries a failed or empty replica read on the primary.

/** up: serving reads; lagging: replay further behind than the bound; down: unreachable, or no longer a standby. */
export type ReplicaState = "up" | "lagging" | "down";

/** What the last probe of the replica found. */
export type ReplicaStatus = {
  state: ReplicaState;
  /** Seconds the replica's replay is behind (0 when it had replayed everything the primary had written); null when unknown. */
  lagS: number | null;
  /** `pg_last_wal_replay_lsn()` on the replica at the probe; null when down. */
  replayLsn: string | null;
  /** When the probe ran (or the failure was seen). */
  checkedAt: Date;
  /** Why it is not up, for logs and /api/health; null when up. */
  reason: string | null;
};

/** Options of {@link ReadReplica}. */
export type ReadReplicaOptions = {
  /** The primary's pool (the runtime role's): writes, and every read the replica cannot serve. */
  primary: pg.Pool;
  /** The replica's pool, as the same runtime role ({@link readReplicaUrl}). */
  replica: pg.Pool;
  /** Replay further behind than this many seconds sends reads to the primary. Default 10. */
  maxLagS?: number;
  /** A probe older than this is refreshed (in the background; reads use the last one meanwhile). Default 1 000 ms. */
  refreshMs?: number;
  /** A probe that takes longer counts as the replica being down. Default 2 000 ms. */
  probeTimeoutMs?: number;
  /** Called when the state changes (up ↔ lagging ↔ down): log it. */
  onChange?: (status: ReplicaStatus, previous: ReplicaStatus | null) => void;
};

/** An LSN (`16/B374D848`) as a number of bytes. Throws on anything else. */
export const parseLsn = (lsn: string): bigint => {
  const match = /^([0-9A-Fa-f]{1,8})\/([0-9A-Fa-f]{1,8})$/.exec(lsn);
  if (!match) throw new Error(`not an LSN: ${lsn.slice(0, 40)}`);
  return (BigInt(`0x${match[1]}`) << 32n) | BigInt(`0x${match[2]}`);
};

/** Whether `lsn` is a well-formed LSN (a cookie may hold anything). */
export const isLsn = (lsn: string): boolean => /^[0-9A-Fa-f]{1,8}\/[0-9A-Fa-f]{1,8}$/.test(lsn);

/** Negative, zero or positive as `a` is before, at or after `b`. */
export const compareLsn = (a: string, b: string): number => {
  const d = parseLsn(a) - parseLsn(b);
  return d < 0n ? -1 : d > 0n ? 1 : 0;
};

/** How many recent probes' primary positions bound the lag. */
const MARKS = 64;

/** Where a read ran: the pool, and whether it is the replica's. */
export type ReadTarget = { pool: pg.Pool; isReplica: boolean };

/**
 * The read router of a process with a streaming replica: one per process, next to its pools.
 * Decisions read a cached probe ({@link ReadReplica.status}); at most one probe runs at a time, and
 * only while reads arrive (an idle console probes nothing).
 */
export class ReadReplica {
  readonly primary: pg.Pool;
  readonly replica: pg.Pool;
  readonly maxLagS: number;
  private readonly refreshMs: number;
  private readonly probeTimeoutMs: number;
  private last: ReplicaStatus | null = null;
  private probing: Promise<ReplicaStatus> | null = null;
  /** The primary's position at recent probes and when each probe began (oldest first). */
  private marks: Array<{ lsn: string; at: number }> = [];

  constructor(private readonly options: ReadReplicaOptions) {
    this.primary = options.primary;
    this.replica = options.replica;
    this.maxLagS = options.maxLagS ?? 10;
    this.refreshMs = options.refreshMs ?? 1000;
    this.probeTimeoutMs = options.probeTimeoutMs ?? 2000;
  }

  /**
   * The replica's status: the last probe while it is fresh; a stale one is refreshed in the
   * background and used meanwhile, unless it is older than ten refresh periods (or there is none),
   * when the probe is awaited. Never throws.
   */
  async status(): Promise<ReplicaStatus> {
    const age = this.last ? Date.now() - this.last.checkedAt.getTime() : Number.POSITIVE_INFINITY;
    if (age < this.refreshMs) return this.last!;
    const probe = this.refresh();
    return age < this.refreshMs * 10 ? this.last! : probe;
  }

  /** Probes now (joining a probe under way) and returns what it found. Never throws. */
  refresh(): Promise<ReplicaStatus> {
    this.probing ??= this.probe().finally(() => {
      this.probing = null;
    });
    return this.probing;
  }

  /**
   * The pool for a read that must see the caller's last write (`minLsn`, the primary's position
   * after it; null when the caller wrote nothing lately): the replica when it is up and, at its
   * last probe, had replayed past `minLsn`; otherwise the primary.
   */
  async choose(minLsn: string | null): Promise<ReadTarget> {
    const s = await this.status();
    const isServing = s.state === "up" && s.replayLsn !== null && (minLsn === null || !isLsn(minLsn) || compareLsn(s.replayLsn, minLsn) >= 0);
    return isServing ? { pool: this.replica, isReplica: true } : { pool: this.primary, isReplica: false };
  }

  /**
   * Runs `read` where {@link choose} says; when it ran on the replica and failed (the replica went
   * away, a recovery conflict cancelled it) or found nothing (null/undefined: a row the replica has
   * not replayed yet), runs it again on the primary. A failure marks the replica down until the
   * next probe.
   */
  async run<T>(minLsn: string | null, read: (pool: pg.Pool) => Promise<T>): Promise<T> {
    const target = await this.choose(minLsn);
    if (!target.isReplica) return read(this.primary);
    try {
      const result = await read(this.replica);
      if (result !== null && result !== undefined) return result;
    } catch (error) {
      this.readFailed(error);
    }
    return read(this.primary);
  }

  /**
   * A read on the replica failed (the caller runs it again on the primary): when the replica could
   * not be reached, it serves nothing until the next probe; any other error (a query cancelled by a
   * recovery conflict) leaves it serving.
   */
  readFailed(error: unknown): void {
    if (isConnectionFailure(error)) this.markDown(error);
  }

  /** The primary's WAL insert position now: what a reader of a write just committed must see replayed. */
  async writeLsn(): Promise<string> {
    const { rows } = await this.primary.query<{ lsn: string }>("SELECT pg_current_wal_insert_lsn()::text AS lsn");
    return rows[0]!.lsn;
  }

  /** A read on the replica failed: it serves nothing until the next probe says otherwise. */
  markDown(error: unknown): void {
    this.set({ state: "down", lagS: null, replayLsn: null, checkedAt: new Date(), reason: messageOf(error) });
  }

  private async probe(): Promise<ReplicaStatus> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`probe took more than ${this.probeTimeoutMs} ms`)), this.probeTimeoutMs);
    });
    try {
      return this.set(await Promise.race([this.measure(), timeout]));
    } catch (error) {
      return this.set({ state: "down", lagS: null, replayLsn: null, checkedAt: new Date(), reason: messageOf(error) });
    } finally {
      clearTimeout(timer);
    }
  }

  // The primary's position first, then the replica's replay: a replay at or past it had caught up
  // (lag 0, however long ago the last transaction was: an idle primary writes nothing to replay).
  // Behind it, every write older than the newest earlier probe whose primary position the replay
  // has passed is replayed, so the lag is at most that probe's age; and at most the age of the
  // last transaction replayed (the replica's clock; null after a restart until one is). The
  // smaller bound counts. (pg_stat_replication's replay_lag is the primary's view, but its
  // columns are hidden from a role without pg_read_all_stats.)
  private async measure(): Promise<ReplicaStatus> {
    const startedAt = Date.now();
    const primaryLsn = await this.writeLsn();
    const { rows } = await this.replica.query<{ is_standby: boolean; replay_lsn: string | null; since_replay_s: number | null }>(
      `SELECT pg_is_in_recovery() AS is_standby, pg_last_wal_replay_lsn()::text AS replay_lsn,
              extract(epoch FROM clock_timestamp() - pg_last_xact_replay_timestamp())::float8 AS since_replay_s`,
    );
    const row = rows[0]!;
    const checkedAt = new Date();
    if (!row.is_standby || row.replay_lsn === null) {
      return { state: "down", lagS: null, replayLsn: null, checkedAt, reason: "not a standby (promoted, or not a replica of this primary)" };
    }
    this.marks = [...this.marks.slice(-(MARKS - 1)), { lsn: primaryLsn, at: startedAt }];
    const isCaughtUp = compareLsn(row.replay_lsn, primaryLsn) >= 0;
    const passed = this.marks.findLast((m) => compareLsn(row.replay_lsn!, m.lsn) >= 0);
    const bounds = [row.since_replay_s, passed ? (checkedAt.getTime() - passed.at) / 1000 : null].filter((b): b is number => b !== null);
    const lagS = isCaughtUp ? 0 : bounds.length ? Math.max(0, Math.min(...bounds)) : null;
    const isLagging = lagS === null || lagS > this.maxLagS;
    return {
      state: isLagging ? "lagging" : "up",
      lagS,
      replayLsn: row.replay_lsn,
      checkedAt,
      reason: isLagging ? (lagS === null ? "replay behind the primary, lag unknown" : `replay ${lagS.toFixed(1)} s behind (bound ${this.maxLagS} s)`) : null,
    };
  }

  private set(status: ReplicaStatus): ReplicaStatus {
    const previous = this.last;
    this.last = status;
    if (previous?.state !== status.state) this.options.onChange?.(status, previous);
    return status;
  }
}

// No connection (refused, reset, timed out, unknown host), the server shutting down or refusing
// connections (57P0x, 53300), or any SQLSTATE of class 08 (connection exception).
const CONNECTION_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "ENOTFOUND", "EAI_AGAIN", "EPIPE", "57P01", "57P02", "57P03", "53300"]);

/** Whether `error` (or its cause) says the server could not be reached or dropped the connection. */
export const isConnectionFailure = (error: unknown): boolean => {
  for (let e = error, depth = 0; e && typeof e === "object" && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const { code, message } = e as { code?: unknown; message?: unknown };
    if (typeof code === "string" && (CONNECTION_CODES.has(code) || /^08[0-9A-Z]{3}$/.test(code))) return true;
    if (typeof message === "string" && /timeout exceeded when trying to connect|Connection terminated|connect ECONNREFUSED/i.test(message)) return true;
  }
  return false;
};

const messageOf = (error: unknown): string => (error instanceof Error ? error.message : String(error)).slice(0, 200);
