import type { Db } from "../db";
import { fenceSql } from "./fence";

/**
 * A lease as its holder knows it: the row, the fencing token and the attempt number the claim
 * returned. Every write of the holder (ack, fail, heartbeat, hand-back, effect) matches all three
 * against the RUNNING row, so a token handed out twice — say a sequence value reused after a crash
 * — still cannot pass for another attempt.
 */
export type LeaseRef = { id: string; leaseToken: string; attempt: number };
/** A lease to extend, with the attempt's progress (its JSON) when it changed since the last heartbeat. */
export type HeartbeatItem = LeaseRef & { progress?: string | null };
export type ExtendOutcome = {
  /** Leases extended; `leaseUntil` ≤ now means the bound (deadline, max runtime) was reached. */
  extended: Array<{ id: string; leaseUntil: Date; cancelRequested: boolean }>;
  /** Leases this worker no longer holds: the attempt must stop and must not ack. */
  lost: string[];
};

/**
 * Heartbeats a batch of leases. The new lease is `now + lease_seconds` but never past the job's
 * deadline nor `claimed_at + max_runtime_s`. Fenced by token. Lease columns are in no index, so
 * this is a HOT update. Fenced by token and attempt.
 *
 * It runs with synchronous_commit off, in a statement of its own on Porter's pool (never inside a
 * caller's transaction): a crash of PostgreSQL can lose the heartbeats of its last ~200 ms
 * (wal_writer_delay), nothing else. Lost, a heartbeat leaves the older `lease_until` and
 * `heartbeat_at`: the lease may then look expired sooner than it is, and the rescue takes the job
 * back while its worker still runs it — which records that attempt (`lease_expired`), refuses the
 * worker's later heartbeat, ack and effects by the fence, and runs the job again (effects are
 * ledgered). No acknowledged result, no claim and no attempt record depends on a heartbeat, and any
 * later synchronous commit (an ack) flushes the heartbeats before it. Reports cancel requests so
 * the worker can signal the handler.
 *
 * Progress rides along: an item's `progress` (JSON, validated by the SDK) replaces the row's, and
 * an item without one keeps it — `ctx.progress()` costs no statement of its own, and the column is
 * in no index, so the update stays HOT. Progress shares the heartbeat's durability (asynchronous
 * commit): it is a display value, never something a resume depends on (that is the checkpoint).
 */
export const extendLeases = async (db: Db, items: HeartbeatItem[], now?: Date): Promise<ExtendOutcome> => {
  if (items.length === 0) return { extended: [], lost: [] };
  const { rows } = await db.query<{ id: string; lease_until: Date; cancel_requested: boolean }>({
    name: "porter.extend",
    text: `WITH input AS (SELECT * FROM unnest($1::bigint[], $2::bigint[], $4::int[], $5::text[]) AS t(id, token, attempt, progress)),
     at AS (SELECT coalesce($3::timestamptz, clock_timestamp()) AS t, set_config('synchronous_commit', 'off', true))
     UPDATE jobs j
        SET lease_until = greatest(j.lease_until, least((SELECT t FROM at) + q.lease_seconds * interval '1 second',
                                                        coalesce(j.deadline_at, 'infinity'),
                                                        j.claimed_at + q.max_runtime_s * interval '1 second')),
            heartbeat_at = (SELECT t FROM at),
            progress = coalesce(i.progress::jsonb, j.progress)
       FROM input i, queues q
      WHERE ${fenceSql()} AND q.id = j.queue_id
     RETURNING j.id::text, j.lease_until, j.cancel_requested_at IS NOT NULL AS cancel_requested`,
    values: [items.map((i) => i.id), items.map((i) => i.leaseToken), now ?? null, items.map((i) => i.attempt), items.map((i) => i.progress ?? null)],
  });
  const kept = new Set(rows.map((r) => r.id));
  return {
    extended: rows.map((r) => ({ id: r.id, leaseUntil: r.lease_until, cancelRequested: r.cancel_requested })),
    lost: items.map((i) => i.id).filter((id) => !kept.has(id)),
  };
};
