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
   * Called when an idle connection fails (server restart, network loss). The pool discards the
   * connection and opens a new one on next use; without a listener pg would crash the process.
   * Default: ignore (the next query on a broken server reports the failure itself).
   */
  onError?: (error: Error) => void;
};

/**
 * Creates a `pg.Pool` for `connectionString` with Porter's defaults (max 10 connections,
 * statement_timeout off, an `error` listener so a dropped idle connection never crashes the
 * process). The caller owns the pool and must `end()` it.
 */
export function createPool(connectionString: string, opts: CreatePoolOptions = {}): pg.Pool {
  const pool = new pg.Pool({
    connectionString,
    max: opts.max ?? 10,
    application_name: opts.applicationName,
    statement_timeout: opts.statementTimeoutMs ?? 0,
    idleTimeoutMillis: opts.idleTimeoutMillis ?? 30_000,
    connectionTimeoutMillis: opts.connectionTimeoutMillis ?? 10_000,
  });
  const onError = opts.onError ?? (() => {});
  pool.on("error", onError);
  return pool;
}

/**
 * Runs `fn` inside `BEGIN … COMMIT` on one connection checked out of `pool`, and returns its
 * result. If `fn` throws, the transaction is rolled back and the error rethrown. The connection is
 * always released; one whose ROLLBACK failed is destroyed rather than returned to the pool.
 */
export async function withTransaction<T>(
  pool: pg.Pool,
  fn: (client: pg.PoolClient) => Promise<T>,
): Promise<T> {
  const client = await pool.connect();
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
    client.release(broken);
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
