import type { Db } from "../db";
import { integerArray } from "./array-literal";
import type { LeaseRef } from "./extend-leases";
import { fenceSql } from "./fence";

export type StartOutcome = { started: string[]; lost: string[] };

/**
 * Marks prefetched attempts started as their handlers start: until then an attempt rescued from a
 * lost worker is recorded as `not_started` and not counted against max_attempts. The worker sends
 * one statement per batch of jobs leaving its buffer (jobs claimed into free slots were marked by
 * the claim itself). Fenced like the ack (token, attempt, RUNNING): a lease lost meanwhile is
 * reported and that attempt must stop. `started_at` is in no index (a HOT update).
 *
 * Commits with synchronous_commit off, in a statement of its own: what a crash of PostgreSQL can
 * lose is the marks of its last ~200 ms not yet flushed by a later synchronous commit (the ack of
 * any job flushes them). Such an attempt is then rescued as `not_started`: it has its record, its
 * effects are ledgered, its late results are refused — only its count is off by one, in the
 * job's favour. Durable marks would cost a WAL flush per batch of starts on the hot path.
 */
export const startJobs = async (db: Db, items: LeaseRef[], now?: Date): Promise<StartOutcome> => {
  if (items.length === 0) return { started: [], lost: [] };
  const { rows } = await db.query<{ id: string }>({
    name: "porter.start",
    text: `UPDATE jobs j SET started_at = coalesce($4::timestamptz, clock_timestamp())
             FROM unnest($1::bigint[], $2::bigint[], $3::int[]) AS i(id, token, attempt),
                  (SELECT set_config('synchronous_commit', 'off', true)) AS async
            WHERE ${fenceSql()}
           RETURNING j.id::text`,
    values: [integerArray(items, (i) => i.id), integerArray(items, (i) => i.leaseToken), integerArray(items, (i) => i.attempt), now ?? null],
  });
  const started = new Set(rows.map((r) => r.id));
  return { started: [...started], lost: items.map((i) => i.id).filter((id) => !started.has(id)) };
};
