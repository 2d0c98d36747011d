import pg from "pg";

/** A pool, a checked-out client, or a bare client: anything core can run statements on. */
export type Db = pg.Pool | pg.PoolClient | pg.Client;

/**
 * Runs `fn` in a transaction. On a pool, checks out a client and owns BEGIN/COMMIT/ROLLBACK.
 * On a client, runs `fn` on it as is: the caller owns the transaction (a producer enqueueing
 * inside its own transaction), and an error we throw aborts it.
 */
export const inTransaction = async <T>(db: Db, fn: (client: pg.PoolClient | pg.Client) => Promise<T>): Promise<T> => {
  if (!(db instanceof pg.Pool)) return fn(db);
  const client = await db.connect();
  try {
    await client.query("BEGIN");
    const result = await fn(client);
    await client.query("COMMIT");
    return result;
  } catch (error) {
    await client.query("ROLLBACK").catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
};

