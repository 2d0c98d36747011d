import type { Db } from "../db";
import type { LeaseRef } from "./extend-leases";
import { isRunningById } from "./fence";

/**
 * Persists a running attempt's checkpoint (`ctx.checkpoint`): one UPDATE of `jobs.checkpoint`,
 * fenced like every write of a lease holder (id, token, attempt, RUNNING). Returns false when the
 * row did not match — the lease was lost (rescued, cancelled, re-claimed) and nothing was written:
 * the caller treats it as a stale lease.
 *
 * One statement per call, committed synchronously (the pool's default): the caller's promise
 * resolves only once the checkpoint would survive a crash of the worker or of PostgreSQL, which is
 * what a handler resuming from it relies on. Not coalesced with the heartbeat, which commits
 * asynchronously. The column is in no index (a HOT update); the row's size grows by the checkpoint
 * (bounded to 16 KiB by the SDK, TOASTed when large). Not a state transition: the job stays RUNNING.
 */
export const saveCheckpoint = async (db: Db, ref: LeaseRef, json: string): Promise<boolean> => {
  const { rowCount } = await db.query({
    name: "porter.checkpoint",
    text: `UPDATE jobs SET checkpoint = $4::jsonb
            WHERE id = $1 AND lease_token = $2 AND attempt = $3 AND ${isRunningById("jobs")}`,
    values: [ref.id, ref.leaseToken, ref.attempt, json],
  });
  return rowCount === 1;
};
