// Queue samples (docs/observability.md "Console"): the gauges of every queue once a minute, so the
// console can chart backlog seconds and the oldest claimable age over time. The numbers are the
// signals' own (readSignals: backlogSignals, reads/oldest-claimable.ts) — one home for each rule.
import type { Db } from "../db";
import { readSignals } from "../reads/signals";

/** Samples are kept this long (the 7-day chart plus a day). */
export const QUEUE_SAMPLE_RETENTION_MS = 8 * 24 * 3_600_000;

const minuteOf = (at: Date): Date => new Date(Math.floor(at.getTime() / 60_000) * 60_000);

/**
 * Writes one sample per queue for the minute holding `now`, at most once a minute: a probe of the
 * primary key (at, queue_id) skips a minute already sampled, and the insert does nothing on
 * conflict, so two passes (or two leaders in a hand-over) in the same minute write one row per
 * queue. Infinite projected waits (ready work, no concurrency) are stored as NULL backlog with
 * `is_at_risk`. Returns the rows written.
 */
export const sampleQueues = async (db: Db, params: { now?: Date } = {}): Promise<{ written: number }> => {
  const now = params.now ?? new Date();
  const at = minuteOf(now);
  const { rowCount: isSampled } = await db.query("SELECT 1 FROM queue_samples WHERE at = $1 LIMIT 1", [at]);
  if (isSampled) return { written: 0 };
  const { queues } = await readSignals(db, { now });
  if (queues.length === 0) return { written: 0 };
  const finite = (n: number | null): number | null => (n === null || !Number.isFinite(n) ? null : n);
  const { rowCount } = await db.query(
    `INSERT INTO queue_samples (at, queue_id, ready, is_ready_lower_bound, running, effective_concurrency,
                                oldest_claimable_age_s, backlog_s, projected_wait_s, is_at_risk)
     SELECT $1, * FROM unnest($2::text[], $3::int[], $4::bool[], $5::int[], $6::float8[], $7::float8[], $8::float8[], $9::float8[], $10::bool[])
     ON CONFLICT (at, queue_id) DO NOTHING`,
    [
      at,
      queues.map((q) => q.queueId),
      queues.map((q) => q.ready),
      queues.map((q) => q.isReadyLowerBound),
      queues.map((q) => q.running),
      queues.map((q) => (Number.isFinite(q.effectiveConcurrency) ? q.effectiveConcurrency : 0)),
      queues.map((q) => q.oldestClaimableAgeS),
      queues.map((q) => finite(q.backlogS)),
      queues.map((q) => finite(q.projectedWaitS)),
      queues.map((q) => q.isAtRisk),
    ],
  );
  return { written: rowCount ?? 0 };
};

/** Retention: samples older than 8 days, deleted in batches from the old end of the primary key. */
export const pruneQueueSamples = async (db: Db, params: { now?: Date; batch?: number } = {}): Promise<{ pruned: number }> => {
  const batch = params.batch ?? 10_000;
  const before = new Date((params.now ?? new Date()).getTime() - QUEUE_SAMPLE_RETENTION_MS);
  let pruned = 0;
  for (;;) {
    const { rowCount } = await db.query(
      "DELETE FROM queue_samples WHERE ctid = ANY (ARRAY(SELECT ctid FROM queue_samples WHERE at < $1 ORDER BY at LIMIT $2))",
      [before, batch],
    );
    pruned += rowCount ?? 0;
    if ((rowCount ?? 0) < batch) break;
  }
  return { pruned };
};
