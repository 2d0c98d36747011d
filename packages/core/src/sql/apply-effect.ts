import { checkout } from "@porter/db/pool";
import pg from "pg";

/** Raised when an effect is attempted under a lease this worker no longer holds. */
export class StaleLeaseError extends Error {
  override readonly name = "StaleLeaseError";
  constructor(readonly jobId: string) {
    super(`lease of job ${jobId} is no longer held by this attempt`);
  }
}

export type EffectScope = { id: string; jobId: string; tenantId: string; attempt: number; leaseToken: string };

/** The SQLSTATE `porter_effect_commit` raises when the lease is gone at commit (routines/effects.sql). */
export const STALE_LEASE_SQLSTATE = "PR409";

/** The SQLSTATE `porter_effect_close` raises when the key was applied before (routines/effects.sql). */
export const APPLIED_SQLSTATE = "PR208";

type ClaimRow = { held: boolean; claimed: boolean; result: unknown };

/** Options of {@link applyEffect}. */
export type EffectOptions = {
  /**
   * `fn` does nothing but statements through `tx` (no I/O outside it): it then runs before the
   * claim, in the transaction BEGIN opens without waiting for a reply, and the claim, the fence
   * and the result are one statement in the commit message — one round trip besides `fn`'s own.
   * When the key was applied before (or meanwhile, by a transaction this one waited for) or the
   * lease is gone, `fn`'s writes roll back and its outcome is discarded: the stored result is read
   * (by the ordinary path, which does not run `fn`) or the effect refused. `fn` may not read
   * through a cursor (pg's pipeline mode refuses a portal kept open across round trips).
   */
  txOnly?: boolean;
};

/** pg.Client's pipeline mode (pg 8.23 here): queries are written at once, not one per reply. Not in @types/pg. */
type PipelinedClient = pg.PoolClient & { pipeline: boolean };

const APPLIED = Symbol("applied before");

/** A bigint (job row id, lease token) or integer as a SQL literal: digits only, or it throws. */
const integerLiteral = (value: string | number): string => {
  const n = BigInt(value);
  return n.toString();
};

/**
 * `ctx.effect(key, fn)`: runs `fn` at most once per (tenant, key) — per committed ledger row — in
 * one transaction on one connection with the ledger row: database writes made through `fn`'s client
 * commit together with it. Two messages of the simple protocol around `fn` (routines/effects.sql):
 * `BEGIN; SELECT * FROM porter_effect_claim(…)` checks the caller's lease (token, attempt, RUNNING;
 * a plain read, no lock: the worker's start marks, heartbeats and acks never wait on `fn`) and
 * claims the ledger row; `SELECT porter_effect_commit(…); COMMIT` fences — checks the lease again
 * under FOR SHARE, held to the COMMIT in the same message — stores `fn`'s result and marks the
 * attempt started if its start mark has not landed. A stale attempt is refused with
 * StaleLeaseError, before `fn` or at commit (everything rolled back). When the key was applied
 * before (by an earlier attempt or another job of the tenant), `fn` is not run and the stored
 * result is returned.
 *
 * The values go in as literals (escaped; integers checked): a parameterised statement cannot share
 * a message with BEGIN or COMMIT, and each message is a round trip. Plans are cached in the
 * functions. Was six round trips (BEGIN, lock, start mark, claim, result, COMMIT) plus `fn`'s.
 * With `txOnly`, one (applyPipelined): handler time per job 1.57× a plain write's against 2.0×
 * (bench/src/probe/effect-ab.ts, mixed mode, load 13–19).
 */
export const applyEffect = async <T>(
  pool: pg.Pool,
  scope: EffectScope,
  key: string,
  fn: (tx: pg.PoolClient) => Promise<T>,
  options: EffectOptions = {},
): Promise<{ applied: boolean; result: T }> => {
  if (options.txOnly) {
    const applied = await applyPipelined(pool, scope, key, fn);
    if (applied !== APPLIED) return { applied: true, result: applied };
    // Applied before: the ordinary claim returns the stored result and does not run `fn`.
  }
  // Checked out with an error listener: PostgreSQL restarting while `fn` runs fails this call with
  // a connection error (the attempt fails retryably) instead of crashing the worker process.
  const { client, release } = await checkout(pool);
  const lease = `${integerLiteral(scope.id)}, ${integerLiteral(scope.leaseToken)}, ${integerLiteral(scope.attempt)}`;
  const ledgerKey = `${client.escapeLiteral(scope.tenantId)}, ${client.escapeLiteral(key)}`;
  let broken: Error | undefined;
  let isOpen = false;
  try {
    isOpen = true;
    const opened = (await client.query(
      `BEGIN; SELECT * FROM porter_effect_claim(${lease}, ${ledgerKey}, ${client.escapeLiteral(scope.jobId)}::uuid)`,
    )) as unknown as pg.QueryResult<ClaimRow>[];
    const claim = opened[1]?.rows[0];
    if (!claim?.held) throw new StaleLeaseError(scope.jobId);
    if (!claim.claimed) {
      await client.query("COMMIT");
      isOpen = false;
      return { applied: false, result: claim.result as T };
    }
    const result = await fn(client);
    const json = result === undefined || result === null ? "NULL" : `${client.escapeLiteral(JSON.stringify(result))}::jsonb`;
    try {
      await client.query(`SELECT porter_effect_commit(${lease}, ${ledgerKey}, ${json}); COMMIT`);
    } catch (error) {
      if ((error as { code?: string }).code === STALE_LEASE_SQLSTATE) throw new StaleLeaseError(scope.jobId);
      throw error;
    }
    isOpen = false;
    return { applied: true, result };
  } catch (error) {
    if (isOpen) {
      await client.query("ROLLBACK").catch((rollbackError: unknown) => {
        broken = rollbackError instanceof Error ? rollbackError : new Error(String(rollbackError));
      });
    }
    throw error;
  } finally {
    release(broken);
  }
};

/**
 * `applyEffect` with `txOnly`: one transaction in which `fn` runs first and the claim comes last.
 * `BEGIN` is written and `fn` started at once, its statements written behind it without waiting
 * (pg's pipeline mode, for this checkout only); then `SELECT porter_effect_close(…); COMMIT`
 * checks the lease under FOR SHARE (PR409 when gone), writes the ledger row with `fn`'s result
 * (PR208 when the key is there: applied before) and commits. On either error everything rolls
 * back. One round trip besides `fn`'s, one ledger write. `fn` is always awaited before ROLLBACK or
 * COMMIT, so none of its statements can run outside the transaction. Returns APPLIED (rolled back)
 * when the key was applied before.
 */
const applyPipelined = async <T>(pool: pg.Pool, scope: EffectScope, key: string, fn: (tx: pg.PoolClient) => Promise<T>): Promise<T | typeof APPLIED> => {
  const { client, release } = await checkout(pool);
  const piped = client as PipelinedClient;
  let broken: Error | undefined;
  let isOpen = false;
  try {
    piped.pipeline = true;
    isOpen = true;
    const begun = client.query("BEGIN").then(
      () => undefined,
      (error: unknown) => error,
    );
    const outcome = await (async () => fn(client))().then(
      (value) => ({ value }),
      (error: unknown) => ({ error }),
    );
    const beginError = await begun;
    if (beginError !== undefined) throw beginError;
    if ("error" in outcome) throw outcome.error;
    const lease = `${integerLiteral(scope.id)}, ${integerLiteral(scope.leaseToken)}, ${integerLiteral(scope.attempt)}`;
    const row = `${client.escapeLiteral(scope.tenantId)}, ${client.escapeLiteral(key)}, ${client.escapeLiteral(scope.jobId)}::uuid`;
    const json = outcome.value === undefined || outcome.value === null ? "NULL" : `${client.escapeLiteral(JSON.stringify(outcome.value))}::jsonb`;
    try {
      await client.query(`SELECT porter_effect_close(${lease}, ${row}, ${json}); COMMIT`);
    } catch (error) {
      const code = (error as { code?: string }).code;
      if (code === STALE_LEASE_SQLSTATE) throw new StaleLeaseError(scope.jobId);
      if (code !== APPLIED_SQLSTATE) throw error;
      isOpen = false;
      await client.query("ROLLBACK");
      return APPLIED;
    }
    isOpen = false;
    return outcome.value;
  } catch (error) {
    if (isOpen) {
      await client.query("ROLLBACK").catch((rollbackError: unknown) => {
        broken = rollbackError instanceof Error ? rollbackError : new Error(String(rollbackError));
      });
    }
    throw error;
  } finally {
    piped.pipeline = false;
    release(broken);
  }
};

/** An effect given as one statement (`ctx.effect(key, { text, values })`): pg's query config shape. */
export type EffectStatement = { text: string; values?: unknown[] };

/** What {@link applyEffectStatement} resolves to: `applied` false when the key was applied before (nothing ran). */
export type EffectStatementResult<R extends pg.QueryResultRow = pg.QueryResultRow> = { applied: boolean; rowCount: number; rows: R[] };

/** The parts of pg's Query (lib/query.js) the one-message effect builds on; not in @types/pg. */
type PgQuery = pg.Submittable & {
  callback?: (error: Error | null, result?: pg.QueryResult | pg.QueryResult[]) => void;
  requiresPreparation(): boolean;
  _getRows(connection: PgConnection, rows?: number): void;
};
type PgConnection = {
  parse(config: { text: string; name: string; types: unknown[] }): void;
  bind(config: { portal: string; statement: string; values: unknown[] }): void;
  describe(config: { type: "P"; name: string }): void;
  execute(config: { portal: string; rows?: number }): void;
  sync(): void;
};
const PgQueryClass = pg.Query as unknown as new (config: pg.QueryConfig) => PgQuery;

/**
 * The statement, then `SELECT porter_effect_close(…)` (the lease checked and the job row locked by
 * porter_effect_fence, the ledger row: routines/effects.sql), written together and closed by ONE
 * Sync: the extended protocol runs the messages up to a Sync as one implicit transaction, committed
 * at the Sync, or rolled back whole when any of them fails (the backend skips the rest up to the
 * Sync). So the effect is one message and one round trip, like an autocommitted statement. pg's
 * own Query writes the statement (values mapped as for any query: a value it cannot map fails its
 * Bind, after which only Close and Sync follow the Parse — nothing runs); its last step, which
 * would send Execute and Sync, is where the close is put in between.
 */
class EffectStatementQuery extends PgQueryClass {
  constructor(
    statement: EffectStatement,
    private readonly closeText: string,
  ) {
    super({ text: statement.text, values: statement.values ?? [] });
  }
  override requiresPreparation(): boolean {
    return true;
  }
  override _getRows(connection: PgConnection): void {
    connection.execute({ portal: "" });
    connection.parse({ text: this.closeText, name: "", types: [] });
    connection.bind({ portal: "", statement: "", values: [] });
    connection.describe({ type: "P", name: "" });
    connection.execute({ portal: "" });
    connection.sync();
  }
}

/**
 * `ctx.effect(key, { text, values })`: one statement applied at most once per (tenant, key), in
 * one transaction with its ledger row and the lease check, sent as one message (one round trip;
 * {@link EffectStatementQuery}). The statement runs first; the close after it checks the lease
 * and locks the job row (StaleLeaseError: everything rolled back) and writes the ledger row, raising
 * PR208 when the key is there — applied before, or by a concurrent attempt that committed first —
 * and then the statement's writes roll back and the call resolves `{ applied: false }`. The
 * ledger's result is NULL: what a later call learns is that the key was applied.
 */
export const applyEffectStatement = async <R extends pg.QueryResultRow = pg.QueryResultRow>(
  pool: pg.Pool,
  scope: EffectScope,
  key: string,
  statement: EffectStatement,
): Promise<EffectStatementResult<R>> => {
  const { client, release } = await checkout(pool);
  let broken: Error | undefined;
  try {
    const lease = `${integerLiteral(scope.id)}, ${integerLiteral(scope.leaseToken)}, ${integerLiteral(scope.attempt)}`;
    const row = `${client.escapeLiteral(scope.tenantId)}, ${client.escapeLiteral(key)}, ${client.escapeLiteral(scope.jobId)}::uuid`;
    const query = new EffectStatementQuery(statement, `SELECT porter_effect_close(${lease}, ${row}, NULL)`);
    const results = await new Promise<pg.QueryResult | pg.QueryResult[] | undefined>((resolve, reject) => {
      query.callback = (error, result) => (error ? reject(error) : resolve(result));
      client.query(query);
    });
    const done = (Array.isArray(results) ? results[0] : results) as pg.QueryResult<R> | undefined;
    return { applied: true, rowCount: done?.rowCount ?? 0, rows: done?.rows ?? [] };
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code === APPLIED_SQLSTATE) return { applied: false, rowCount: 0, rows: [] };
    if (code === STALE_LEASE_SQLSTATE) throw new StaleLeaseError(scope.jobId);
    // A connection error leaves the client unusable; an error of the statement leaves it clean (the
    // backend rolled the implicit transaction back at the Sync).
    if (code === undefined) broken = error instanceof Error ? error : new Error(String(error));
    throw error;
  } finally {
    release(broken);
  }
};
