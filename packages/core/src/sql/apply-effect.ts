import { checkout } from "@porter/db/pool";
import type pg from "pg";

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

type ClaimRow = { held: boolean; claimed: boolean; result: unknown };

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
 */
export const applyEffect = async <T>(
  pool: pg.Pool,
  scope: EffectScope,
  key: string,
  fn: (tx: pg.PoolClient) => Promise<T>,
): Promise<{ applied: boolean; result: T }> => {
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
