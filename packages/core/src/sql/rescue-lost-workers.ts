import type { Db } from "../db";
import { WORKER_LOST_AFTER_MS } from "../policy/worker-liveness";
import { type RescueOutcome, rescueOutcome, rescueSql } from "./rescue";

/**
 * A worker counts as lost when it stopped (a clean exit that left leases behind) or its heartbeat
 * row is older than the threshold — and the server itself has been up that long: after a restart
 * of PostgreSQL every worker's row is stale until it reconnects, and that is not a lost worker.
 */
const LOST_WORKERS = `
  SELECT w.id FROM workers w
   WHERE (w.stopped_at IS NOT NULL OR w.heartbeat_at < (SELECT t FROM at) - $3 * interval '1 millisecond')
     AND pg_postmaster_start_time() < (SELECT t FROM at) - $3 * interval '1 millisecond'`;

const FIND_LOST_SQL = `WITH at AS (SELECT coalesce($1::timestamptz, clock_timestamp()) AS t)
  SELECT EXISTS (SELECT 1 FROM jobs j WHERE j.state = 'RUNNING' AND j.lease_owner IN (${LOST_WORKERS.replaceAll("$3", "$2")})) AS found`;

const RESCUE_LOST_SQL = rescueSql({
  select: `j.lease_owner IN (${LOST_WORKERS})`,
  code: "'WORKER_LOST'",
  message: "'worker ' || j.lease_owner || ' stopped heartbeating; its leases were released before they expired'",
});

/**
 * Releases the RUNNING jobs of lost workers at once, instead of at their leases' end: a SIGKILLed
 * worker's jobs are claimable again within `WORKER_LOST_AFTER_MS` (worker-liveness.ts) of its last
 * heartbeat. Same transitions as a lease expiry (`rescueSql`): started attempts burn and are
 * recorded `lease_expired` (code WORKER_LOST); prefetched ones that never started are recorded
 * `not_started` and not counted. A first cheap probe (the RUNNING partial index, the small
 * `workers` table) skips the statement when no lost worker holds a job; the statement re-checks
 * the worker in the same snapshot as its writes. Transition `rescue_lost_worker` (sql/transitions.ts).
 */
export const rescueLostWorkers = async (db: Db, params: { now?: Date; batch?: number; lostAfterMs?: number } = {}): Promise<RescueOutcome> => {
  const lostAfterMs = params.lostAfterMs ?? WORKER_LOST_AFTER_MS;
  const { rows: probe } = await db.query<{ found: boolean }>(FIND_LOST_SQL, [params.now ?? null, lostAfterMs]);
  if (!probe[0]?.found) return { requeued: 0, dead: 0, cancelled: 0, expired: 0, notStarted: 0 };
  const { rows } = await db.query<{ state: string; n: string; not_started: string }>(RESCUE_LOST_SQL, [params.now ?? null, params.batch ?? 1000, lostAfterMs]);
  return rescueOutcome(rows);
};
