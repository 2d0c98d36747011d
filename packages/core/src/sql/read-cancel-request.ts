import type { Db } from "../db";
import type { LeaseRef } from "./extend-leases";

/**
 * The cancel request on an attempt a worker runs, when a cancel notification named its row:
 * `{ reason }` while the lease is still this attempt's (same token) and a cancel was requested,
 * undefined otherwise (the job moved on, or the notification was for an earlier lease). A read
 * only, by primary key: the worker then aborts that attempt's signal; the heartbeat reports the
 * same request when this read fails.
 */
export const readCancelRequest = async (db: Db, lease: Pick<LeaseRef, "id" | "leaseToken">): Promise<{ reason: string | null } | undefined> => {
  const { rows } = await db.query<{ cancel_reason: string | null }>(
    `SELECT cancel_reason FROM jobs WHERE id = $1 AND lease_token = $2 AND cancel_requested_at IS NOT NULL`,
    [lease.id, lease.leaseToken],
  );
  const row = rows[0];
  return row ? { reason: row.cancel_reason } : undefined;
};
