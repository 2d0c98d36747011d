import pg from "pg";

/**
 * Anything that can run a query: a pool, a client checked out of a pool, or a standalone client.
 * Functions that only issue statements take a `Queryable`, so callers decide whether the work
 * joins a transaction (pass the `PoolClient` of `withTransaction`) or not (pass the pool).
 */
export type Queryable = pg.Pool | pg.PoolClient | pg.Client;

/** Options of {@link createPool}; every field has a default suited to a Porter process. */
export type CreatePoolOptions = {
  /** Maximum open connections. Default 10. */
  max?: number;
  /** Shown in `pg_stat_activity.application_name`, e.g. `porter-worker:background`. */
  applicationName?: string;
  /**
   * Server-side `statement_timeout` in milliseconds for every connection. Default 0 (off):
   * long statements are bounded by the caller (leases, AbortSignals), not by a global limit.
   */
  statementTimeoutMs?: number;
  /** How long an idle connection is kept open. Default 30 000 ms. */
  idleTimeoutMillis?: number;
  /** How long `connect()` waits for a connection before failing. Default 10 000 ms. */
  connectionTimeoutMillis?: number;
  /**
   * Called when a connection fails (server restart, network loss, `pg_terminate_backend`), idle
   * or checked out. The pool discards an idle one and opens a new one on next use; a checked-out
   * one fails its pending and later queries, and is destroyed when released. Without a listener
   * pg would crash the process with an unhandled 'error' event. Default: ignore (the caller's
   * query reports the failure itself).
   */
  onError?: (error: Error) => void;
  /**
   * Named prepared statements (`{ name, text }` queries: parsed and planned once per connection).
   * Default true. `false` sends every such query unnamed (parse, bind and execute in one round
   * trip), as a connection pooler in transaction mode needs: PgBouncer 1.18 hands each transaction
   * to any server connection, where a statement prepared on another one does not exist.
   */
  preparedStatements?: boolean;
};

/**
 * A pg.Client that sends named queries unnamed ({@link CreatePoolOptions.preparedStatements}):
 * the name is dropped, text, values, types and row mode are kept.
 */
class UnnamedStatementsClient extends pg.Client {
  // pg's query has a dozen overloads; this one forwards every call shape and only rewrites a config object's name.
  override query(...args: unknown[]): never {
    const [config, ...rest] = args;
    const unnamed = config !== null && typeof config === "object" && "name" in config && !("submit" in config) ? { ...config, name: undefined } : config;
    return (pg.Client.prototype.query as (...a: unknown[]) => never).call(this, unnamed, ...rest);
  }
}

/**
 * Creates a `pg.Pool` for `connectionString` with Porter's defaults (max 10 connections,
 * statement_timeout off, named prepared statements on). Every connection it opens gets an `error` listener for its whole life,
 * so a connection dying while idle or while checked out (a transaction, an effect) never crashes
 * the process: pg's pool only listens to idle clients, and a checked-out client emits 'error'
 * when its server goes away. The caller owns the pool and must `end()` it.
 */
export function createPool(connectionString: string, opts: CreatePoolOptions = {}): pg.Pool {
  const pool = new pg.Pool({
    connectionString,
    max: opts.max ?? 10,
    application_name: opts.applicationName,
    statement_timeout: opts.statementTimeoutMs ?? 0,
    idleTimeoutMillis: opts.idleTimeoutMillis ?? 30_000,
    connectionTimeoutMillis: opts.connectionTimeoutMillis ?? 10_000,
    ...(opts.preparedStatements === false ? { Client: UnnamedStatementsClient } : {}),
  });
  const onError = opts.onError ?? (() => {});
  pool.on("error", onError);
  pool.on("connect", (client) => client.on("error", onError));
  return pool;
}

/** A client checked out by {@link checkout}; `release` returns it, or destroys it when broken. */
export type CheckedOut = { client: pg.PoolClient; release: (error?: Error) => void };

/**
 * Checks a client out of `pool` with an `error` listener for as long as it is out, whatever pool
 * it is (one from {@link createPool} has one already; a caller's own pool may not). A connection
 * that dies meanwhile fails the pending query (with a connection error the caller can retry) and
 * is destroyed on release instead of being returned to the pool.
 */
export async function checkout(pool: pg.Pool): Promise<CheckedOut> {
  const client = await pool.connect();
  let lost: Error | undefined;
  const onError = (error: Error) => {
    lost ??= error;
  };
  client.on("error", onError);
  let isReleased = false;
  return {
    client,
    release: (error) => {
      if (isReleased) return;
      isReleased = true;
      client.removeListener("error", onError);
      client.release(error ?? lost);
    },
  };
}

/**
 * Runs `fn` inside `BEGIN … COMMIT` on one connection checked out of `pool` ({@link checkout}),
 * and returns its result. If `fn` throws, the transaction is rolled back and the error rethrown.
 * The connection is always released; one whose ROLLBACK failed or whose connection died is
 * destroyed rather than returned to the pool. A connection lost mid-transaction fails the call with
 * the connection error (when it was lost during COMMIT, the outcome is unknown: retry with the same
 * idempotency key).
 */
export async function withTransaction<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const { client, release } = await checkout(pool);
  let broken: Error | undefined;
  try {
    await client.query("BEGIN");
    const result = await fn(client);
    await client.query("COMMIT");
    return result;
  } catch (error) {
    try {
      await client.query("ROLLBACK");
    } catch (rollbackError) {
      broken = rollbackError instanceof Error ? rollbackError : new Error(String(rollbackError));
    }
    throw error;
  } finally {
    release(broken);
  }
}

/**
 * Runs `fn` in a transaction that `db` decides: on a pool, a transaction of its own
 * ({@link withTransaction}); on a client, the caller's — `fn` runs on it as is, the caller owns
 * BEGIN/COMMIT, and an error `fn` throws aborts the caller's transaction (a producer enqueueing
 * inside its own transaction).
 */
export async function inTransaction<T>(db: Queryable, fn: (client: pg.PoolClient | pg.Client) => Promise<T>): Promise<T> {
  return db instanceof pg.Pool ? withTransaction(db, fn) : fn(db);
}

/**
 * Runs `fn` in a transaction of its own whatever `db` is: on a pool, {@link withTransaction}; on a
 * client (a dedicated connection such as the maintenance leader's, not inside a transaction), a
 * BEGIN … COMMIT on it, rolled back when `fn` throws. For steps that must commit on their own (a
 * redrive's batch, an alert evaluation pass), unlike {@link inTransaction}.
 */
export async function inOwnTransaction<T>(db: Queryable, fn: (client: pg.PoolClient | pg.Client) => Promise<T>): Promise<T> {
  if (db instanceof pg.Pool) return withTransaction(db, fn);
  await db.query("BEGIN");
  try {
    const result = await fn(db);
    await db.query("COMMIT");
    return result;
  } catch (error) {
    await db.query("ROLLBACK").catch(() => undefined);
    throw error;
  }
}

/**
 * Runs independent reads at once on a pool (each on a connection of its own) and one after the
 * other on a client: a client runs one statement at a time, and pg deprecates queueing several on
 * it (the maintenance leader reads the signals on its dedicated connection).
 */
export async function allOn<T extends readonly unknown[]>(db: Queryable, reads: { [K in keyof T]: () => Promise<T[K]> }): Promise<T> {
  if (db instanceof pg.Pool) return (await Promise.all(reads.map((read) => read()))) as unknown as T;
  const out: unknown[] = [];
  for (const read of reads) out.push(await read());
  return out as unknown as T;
}

/**
 * One connection of `pool` kept checked out for a caller that runs one statement at a time (the
 * worker's claim loop, its result writer). PostgreSQL caches a session's plans per connection: the
 * first claim on a connection compiles `porter_claim` and plans its statements (30–120 ms here,
 * against ≈ 1 ms warm), and a pool spreads a sequential caller over whichever connections are idle —
 * several cold ones in a worker's first seconds, and a fresh one after every idle timeout (30 s), so
 * a quiet worker paid a cold claim for nearly every job. Pinned, the caller keeps one warm session.
 *
 * The connection counts against the pool's `max` while pinned. `run` lends it to one call at a
 * time; a call that comes while it is lent runs on a connection of the pool as before. A connection
 * that failed (its `error` event, or any error thrown by a statement on it) is destroyed, not reused,
 * and the next call pins a new one. `fn` must leave no transaction open: single statements.
 * `release()` returns it to the pool (before `pool.end()`, which waits for checked-out clients).
 */
export class PinnedConnection {
  private pinned: CheckedOut | undefined;
  private isLost = false;
  private isLent = false;
  private isReleased = false;

  constructor(private readonly pool: pg.Pool) {}

  async run<T>(fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    if (this.isLent || this.isReleased) return this.runUnpinned(fn);
    this.isLent = true;
    try {
      if (this.pinned && this.isLost) this.drop();
      if (!this.pinned) {
        this.pinned = await checkout(this.pool);
        this.isLost = false;
        this.pinned.client.on("error", this.onError);
      }
      try {
        return await fn(this.pinned.client);
      } catch (error) {
        if (!isStatementError(error) || this.isLost) this.drop(error instanceof Error ? error : new Error(String(error)));
        throw error;
      }
    } finally {
      this.isLent = false;
      if (this.isReleased) this.drop();
    }
  }

  /** Returns the connection to the pool; later calls run on the pool's connections. */
  release(): void {
    this.isReleased = true;
    if (!this.isLent) this.drop();
  }

  private readonly onError = (): void => {
    this.isLost = true;
  };

  private drop(error?: Error): void {
    const pinned = this.pinned;
    this.pinned = undefined;
    pinned?.client.removeListener("error", this.onError);
    // With an error the pool destroys the client (its session may be in any state); without, it keeps it.
    pinned?.release(error ?? (this.isLost ? new Error("connection lost") : undefined));
    this.isLost = false;
  }

  private async runUnpinned<T>(fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    const { client, release } = await checkout(this.pool);
    let broken: Error | undefined;
    try {
      return await fn(client);
    } catch (error) {
      if (!isStatementError(error)) broken = error instanceof Error ? error : new Error(String(error));
      throw error;
    } finally {
      release(broken);
    }
  }
}

/**
 * An error PostgreSQL raised for a statement, after which the session is usable (a single
 * statement outside a transaction): a SQLSTATE, but not connection exceptions (class 08) or the
 * server's shutdown and crash codes (57P01–57P05). Anything else — a socket error, "Connection
 * terminated" — means the connection is gone.
 */
const isStatementError = (error: unknown): boolean => {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" && /^[0-9A-Z]{5}$/.test(code) && !code.startsWith("08") && !code.startsWith("57P");
};
