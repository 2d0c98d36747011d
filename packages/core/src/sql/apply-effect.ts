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

/**
 * `ctx.effect(key, fn)`: runs `fn` at most once per (tenant, key), ever. In one transaction it
 * locks the job row under the caller's lease — token and attempt (FOR SHARE: lease rescue waits, and a stale attempt
 * is refused with StaleLeaseError), marks the attempt started if its mark has not landed yet, claims the ledger row, runs `fn` with the transaction's client
 * — so database writes made through it commit together with the ledger row — and stores `fn`'s
 * result. When the key was applied before (by an earlier attempt or another job of the tenant),
 * `fn` is not run and the stored result is returned.
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
  let broken: Error | undefined;
  try {
    await client.query("BEGIN");
    const lease = await client.query(`SELECT 1 FROM jobs WHERE id = $1 AND lease_token = $2 AND attempt = $3 AND state = 'RUNNING' FOR SHARE`, [
      scope.id,
      scope.leaseToken,
      scope.attempt,
    ]);
    if (!lease.rowCount) throw new StaleLeaseError(scope.jobId);
    // An attempt that applies an effect has started, whatever became of its start mark (sent
    // asynchronously for a prefetched job: sql/start-jobs.ts): marked in the effect's transaction,
    // it can never be recorded `not_started`. Writes only while the mark is missing (rare).
    await client.query(`UPDATE jobs SET started_at = clock_timestamp() WHERE id = $1 AND started_at IS NULL`, [scope.id]);
    const claimed = await client.query(`INSERT INTO job_effects (tenant_id, key, job_id, attempt) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`, [
      scope.tenantId,
      key,
      scope.jobId,
      scope.attempt,
    ]);
    if (!claimed.rowCount) {
      const { rows } = await client.query<{ result: T }>(`SELECT result FROM job_effects WHERE tenant_id = $1 AND key = $2`, [scope.tenantId, key]);
      await client.query("COMMIT");
      return { applied: false, result: rows[0]?.result as T };
    }
    const result = await fn(client);
    await client.query(`UPDATE job_effects SET result = $3 WHERE tenant_id = $1 AND key = $2`, [scope.tenantId, key, JSON.stringify(result ?? null)]);
    await client.query("COMMIT");
    return { applied: true, result };
  } catch (error) {
    await client.query("ROLLBACK").catch((rollbackError: unknown) => {
      broken = rollbackError instanceof Error ? rollbackError : new Error(String(rollbackError));
    });
    throw error;
  } finally {
    release(broken);
  }
};
