import type { Db } from "../db";

/**
 * A provider said "slow down" (HTTP 429, `Retry-After`) for a resource key: the key is paused for
 * everyone until `retryAfterMs` has passed (claims give its queues no room), and its concurrency is
 * halved (multiplicative decrease of the adaptive `current_limit`, never below 1; from the
 * configured limit, or from what was running when none is configured) — once per congestion
 * event: reports within a second of the last decrease only extend the pause.
 */
export const reportThrottle = async (
  db: Db,
  params: { resourceKeyId: string; retryAfterMs?: number; now?: Date },
): Promise<{ currentLimit: number; throttledUntil: Date } | null> => {
  const { rows } = await db.query<{ current_limit: number; throttled_until: Date }>(
    `WITH at AS (SELECT coalesce($3::timestamptz, clock_timestamp()) AS t)
     UPDATE resource_keys rk
        SET throttled_until = greatest(coalesce(rk.throttled_until, '-infinity'), (SELECT t FROM at) + $2 * interval '1 millisecond'),
            -- One decrease per congestion event: the many 429s of one burst halve the limit once.
            current_limit = CASE WHEN rk.current_limit IS NOT NULL AND rk.adapted_at > (SELECT t FROM at) - interval '1 second'
                                 THEN rk.current_limit
                                 ELSE greatest(1, floor(coalesce(rk.current_limit, rk.concurrency_limit,
                                        (SELECT count(*) FROM jobs r JOIN queues q ON q.id = r.queue_id
                                          WHERE r.state = 'RUNNING' AND q.resource_key_id = rk.id)::int, 2) / 2.0))::int END,
            adapted_at = CASE WHEN rk.current_limit IS NOT NULL AND rk.adapted_at > (SELECT t FROM at) - interval '1 second'
                              THEN rk.adapted_at ELSE (SELECT t FROM at) END
      WHERE rk.id = $1
     RETURNING rk.current_limit, rk.throttled_until`,
    [params.resourceKeyId, params.retryAfterMs ?? 1000, params.now ?? null],
  );
  const row = rows[0];
  return row ? { currentLimit: row.current_limit, throttledUntil: row.throttled_until } : null;
};

/**
 * Additive increase: a resource key calm for `calmMs` since its limit last moved gets one more
 * slot; back at its configured limit (or, with none configured, at 64) the adaptive limit is
 * lifted.
 */
export const recoverResourceLimits = async (db: Db, params: { now?: Date; calmMs?: number } = {}): Promise<number> => {
  const { rowCount } = await db.query(
    `WITH at AS (SELECT coalesce($1::timestamptz, clock_timestamp()) AS t)
     UPDATE resource_keys rk
        SET current_limit = CASE WHEN rk.concurrency_limit IS NOT NULL AND rk.current_limit + 1 >= rk.concurrency_limit THEN NULL
                                 WHEN rk.concurrency_limit IS NULL AND rk.current_limit >= 64 THEN NULL
                                 ELSE rk.current_limit + 1 END,
            adapted_at = (SELECT t FROM at)
      WHERE rk.current_limit IS NOT NULL
        AND coalesce(rk.throttled_until, '-infinity') <= (SELECT t FROM at)
        AND coalesce(rk.adapted_at, '-infinity') <= (SELECT t FROM at) - $2 * interval '1 millisecond'`,
    [params.now ?? null, params.calmMs ?? 2000],
  );
  return rowCount ?? 0;
};
