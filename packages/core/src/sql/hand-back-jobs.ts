import type { Db } from "../db";
import type { LeaseRef } from "./extend-leases";
import { fenceSql } from "./fence";
import { insertAttempt } from "./finish";
import { flowHistogramsSql, flowUpsertSql, readyAtBeforeSql, waitMsSql } from "./flow-write";

/**
 * Drain: returns unfinished leases to READY without burning an attempt (the attempt counter goes
 * back), recording a `handed_back` attempt for the timeline. Fenced by token and attempt. The
 * attempt's wait goes to the flow rollups' wait histogram (the claim counted its start; the
 * histogram is written where an attempt ends: flow-write.ts).
 * Transition `hand_back` (sql/transitions.ts).
 */
export const handBackJobs = async (db: Db, items: LeaseRef[], now?: Date): Promise<{ handedBack: string[]; stale: string[] }> => {
  if (items.length === 0) return { handedBack: [], stale: [] };
  const { rows } = await db.query<{ id: string }>(
    `WITH input AS (SELECT * FROM unnest($1::bigint[], $2::bigint[], $4::int[]) AS t(id, token, attempt)),
     at AS (SELECT coalesce($3::timestamptz, clock_timestamp()) AS t),
     done AS (
       UPDATE jobs j
          SET state = 'READY', attempt = j.attempt - 1, run_at = (SELECT t FROM at), lease_until = NULL
         FROM input i
        WHERE ${fenceSql()}
       RETURNING j.job_id, j.attempt + 1 AS attempt, j.lease_owner, j.lease_token, j.claimed_at, j.heartbeat_at, j.id,
                 j.queue_id, j.job_type, j.tenant_id, ${readyAtBeforeSql} AS ready_at
     ), att AS (${insertAttempt({ outcome: "'handed_back'", finishedAt: "(SELECT t FROM at)" })}
     ), flow AS (${flowUpsertSql("done", "(SELECT t FROM at)", { wait_ms_sum: `sum(${waitMsSql("s.ready_at")})` })}
     ), flow_wait AS (${flowHistogramsSql("(SELECT t FROM at)", [{ source: "done", kind: "w", ms: waitMsSql("s.ready_at") }])})
     SELECT id::text FROM done`,
    [items.map((i) => i.id), items.map((i) => i.leaseToken), now ?? null, items.map((i) => i.attempt)],
  );
  const done = new Set(rows.map((r) => r.id));
  return { handedBack: [...done], stale: items.map((i) => i.id).filter((id) => !done.has(id)) };
};
