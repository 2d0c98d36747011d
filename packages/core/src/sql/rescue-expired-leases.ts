import type { Db } from "../db";
import { type RescueOutcome, rescueOutcome, rescueSql } from "./rescue";

export type { RescueOutcome } from "./rescue";

const RESCUE_EXPIRED_SQL = rescueSql({
  select: "j.lease_until < (SELECT t FROM at)",
  code: "'LEASE_EXPIRED'",
  message: "'the worker stopped heartbeating; its lease expired at ' || j.lease_until::text",
});

/**
 * Recovers jobs whose worker was lost: RUNNING rows whose lease ran out (see `rescueSql` for
 * what happens to each). A lease expiry burns an attempt that started; one that never started
 * (still in its worker's prefetch buffer) is recorded as `not_started` and not counted.
 * Transition `rescue_expired_lease` (sql/transitions.ts).
 */
export const rescueExpiredLeases = async (db: Db, params: { now?: Date; batch?: number } = {}): Promise<RescueOutcome> => {
  const { rows } = await db.query<{ state: string; n: string; not_started: string }>(RESCUE_EXPIRED_SQL, [params.now ?? null, params.batch ?? 1000]);
  return rescueOutcome(rows);
};
