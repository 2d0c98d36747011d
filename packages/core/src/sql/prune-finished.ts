import type { Db } from "../db";

/** How many days of partitions of finished_jobs maintenance keeps created ahead of the clock. */
export const HISTORY_DAYS_AHEAD = 7;

/** Steps of porter_history_retire at most one pass runs (a partition dropped or a chunk of keys each, a short transaction). */
const RETIRE_STEPS_PER_PASS = 12;

/**
 * Rows of a retiring day of finished_jobs whose idempotency keys and effects one pass deletes at
 * most (porter_history_retire's chunks): the leader passes every second, so a day of a million
 * jobs gives its keys back in about 100 passes, each a transaction of well under a second.
 */
export const RETIRE_KEYS_PER_PASS = 10_000;

// The row-by-row retention statement, on finished_jobs (the partitioned table) for the queues
// kept shorter than the horizon; `onTable` points it at one partition, for every queue. Per queue
// and terminal state (DEAD is kept), a range scan of the (queue_id, state, finished_at) index up to
// the queue's cutoff.
const PRUNE_ROWS = `
  WITH at AS (SELECT coalesce($1::timestamptz, clock_timestamp()) AS t),
   victims AS (
     SELECT v.job_id, v.tenant_id, v.idempotency_key
       FROM queues q
       CROSS JOIN unnest(ARRAY['SUCCEEDED', 'CANCELLED', 'EXPIRED']::job_state[]) AS s(state)
       CROSS JOIN LATERAL (
         SELECT f.job_id, f.tenant_id, f.idempotency_key FROM finished_jobs f
          WHERE f.queue_id = q.id AND f.state = s.state
            AND f.finished_at < (SELECT t FROM at) - q.retention_s * interval '1 second'
          ORDER BY f.finished_at
          LIMIT $2
          FOR UPDATE SKIP LOCKED
       ) v
      WHERE q.retention_s < porter_history_horizon_s()
      LIMIT $2
   ), jobs_gone AS (DELETE FROM finished_jobs f USING victims v WHERE f.job_id = v.job_id RETURNING f.job_id), -- primary key
   a AS (DELETE FROM job_attempts x USING victims v WHERE x.job_id = v.job_id),
   e AS (DELETE FROM job_events x USING victims v WHERE x.job_id = v.job_id),
   k AS (DELETE FROM idempotency_keys x USING victims v
          WHERE (x.tenant_id, x.idempotency_key) = (v.tenant_id, v.idempotency_key) AND x.job_id = v.job_id),
   fx AS (DELETE FROM job_effects x USING victims v WHERE x.job_id = v.job_id)
   SELECT count(*)::text AS n FROM jobs_gone`;

/** {@link PRUNE_ROWS} on one partition (a name of this file, never input), for every queue. */
const onTable = (partition: "finished_jobs_default" | "finished_jobs_p_first"): string =>
  PRUNE_ROWS.replaceAll("finished_jobs f", `${partition} f`).replace("WHERE q.retention_s < porter_history_horizon_s()", "");

/**
 * Retention of finished jobs: DEAD jobs are the dead-letter queue and are kept until redriven;
 * the others go once past their queue's `retention_s`, with their attempts, events, effects and
 * idempotency keys. finished_jobs is partitioned by day of creation (migration
 * 20261202002400_partitioned_history), so most history goes a whole partition at a time:
 *
 * - whole partitions: a day whose every job was created before the horizon (the longest retention
 *   of any queue, at least a day) is dropped by `porter_history_retire` (routines/partitions.sql),
 *   after the idempotency keys and effects of its jobs are deleted ({@link RETIRE_KEYS_PER_PASS}
 *   rows a pass at most) and its DEAD and late-finishing rows moved to the default partition; the
 *   day's partitions of job_attempts and job_events are dropped too (migration
 *   20261202003000_partitioned_timeline), their rows of kept or live jobs moved to their default
 *   partitions — no row-by-row DELETE of the jobs or their timelines, no bloat left behind;
 * - row by row, as before: the queues kept shorter than the horizon (their rows are deleted inside
 *   partitions that are dropped later anyway), the default partition (ids no day covers, the rows
 *   kept past their day), and the first partition an upgraded database's old table became, until
 *   it is retired in turn.
 *
 * The hot table never carries history, so pruning cannot bloat it. Transition `prune`
 * (sql/transitions.ts). `pruned` counts finished jobs deleted either way; `partitionsDropped` the
 * partitions dropped (finished_jobs', job_attempts' and job_events' days); `keysDeleted` the
 * idempotency keys of retiring days deleted this pass (0 when no day is being retired).
 */
export const pruneFinished = async (
  db: Db,
  params: { now?: Date; batch?: number; keysPerPass?: number } = {},
): Promise<{ pruned: number; partitionsDropped: number; keysDeleted: number }> => {
  const now = params.now ?? null;
  const batch = params.batch ?? 5000;
  let pruned = 0;
  let partitionsDropped = 0;
  let keysDeleted = 0;
  const count = async (sql: string) => Number((await db.query<{ n: string }>(sql, [now, batch])).rows[0]?.n ?? 0);
  // What there is to do row by row: most databases have no queue kept shorter than the horizon,
  // and the first partition only until it is retired (planning a statement over every partition
  // costs more than this look).
  const { rows } = await db.query<{ has_short: boolean; has_first: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM queues WHERE retention_s < porter_history_horizon_s()) AS has_short,
            to_regclass('public.finished_jobs_p_first') IS NOT NULL AS has_first`,
  );
  if (rows[0]?.has_short) pruned += await count(PRUNE_ROWS);
  pruned += await count(onTable("finished_jobs_default"));
  if (rows[0]?.has_first) pruned += await count(onTable("finished_jobs_p_first"));
  // Then whole days: rows the statements above could delete are gone first, row by row, as their
  // queues' retention says (a day past the horizon holds none of theirs by then).
  // A retiring day's keys a chunk a call, within the pass's budget; a partition a call otherwise.
  let budget = params.keysPerPass ?? RETIRE_KEYS_PER_PASS;
  for (let i = 0; i < RETIRE_STEPS_PER_PASS && budget > 0; i++) {
    const { rows } = await db.query<{ partition_name: string; dropped: string; chunked: string; keys_deleted: string; is_dropped: boolean }>(
      `SELECT partition_name, dropped::text, chunked::text, keys_deleted::text, is_dropped
         FROM porter_history_retire(coalesce($1::timestamptz, clock_timestamp()), $2)`,
      [now, budget],
    );
    const step = rows[0];
    if (!step) break;
    budget -= Number(step.chunked);
    keysDeleted += Number(step.keys_deleted);
    if (!step.is_dropped) break;
    partitionsDropped += 1;
    if (step.partition_name.startsWith("finished_jobs_")) pruned += Number(step.dropped);
  }
  return { pruned, partitionsDropped, keysDeleted };
};

/**
 * Creates the daily partitions of finished_jobs, job_attempts and job_events missing up to {@link HISTORY_DAYS_AHEAD} days after
 * `now` (`porter_history_ensure`, routines/partitions.sql); a day that cannot be locked at once is
 * created on a later pass, and until then its jobs land in the default partition. Returns the
 * partitions created.
 */
export const ensureHistoryPartitions = async (db: Db, params: { now?: Date; days?: number } = {}): Promise<string[]> => {
  const { rows } = await db.query<{ name: string }>(`SELECT name FROM porter_history_ensure(coalesce($1::timestamptz, clock_timestamp()), $2) AS name`, [
    params.now ?? null,
    params.days ?? HISTORY_DAYS_AHEAD,
  ]);
  return rows.map((r) => r.name);
};
