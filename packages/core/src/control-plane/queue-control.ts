import { AppError } from "@porter/contracts";
import { type Db, inTransaction } from "../db";
import { writeAudit } from "./audit";

/**
 * Pauses or resumes a queue (claims skip paused queues at once; running work continues). Audited
 * in the same transaction. Returns whether the flag changed.
 */
export const setQueuePaused = async (db: Db, params: { queueId: string; paused: boolean; actor: string; reason?: string }): Promise<boolean> =>
  inTransaction(db, async (client) => {
    const { rows } = await client.query<{ was: boolean }>(
      `UPDATE queues q SET paused = $2, updated_at = now() FROM queues old
        WHERE q.id = $1 AND old.id = q.id RETURNING old.paused AS was`,
      [params.queueId, params.paused],
    );
    const was = rows[0]?.was;
    if (was === undefined) throw new AppError("NOT_FOUND", { message: `queue ${params.queueId} not found` });
    await writeAudit(client, [
      {
        actor: params.actor,
        action: params.paused ? "queue.pause" : "queue.resume",
        objectType: "queue",
        objectId: params.queueId,
        before: { paused: was },
        after: { paused: params.paused },
        reason: params.reason ?? null,
      },
    ]);
    return was !== params.paused;
  });

/** RUNNING jobs per queue (for drain progress and the console). */
export const runningCounts = async (db: Db, queueIds?: string[]): Promise<Map<string, number>> => {
  const { rows } = await db.query<{ queue_id: string; n: string }>(
    `SELECT queue_id, count(*)::text AS n FROM jobs WHERE state = 'RUNNING' AND ($1::text[] IS NULL OR queue_id = ANY($1))
      GROUP BY queue_id`,
    [queueIds ?? null],
  );
  return new Map(rows.map((r) => [r.queue_id, Number(r.n)]));
};

/** Counts of jobs by queue and state, live and finished. */
export const countsByState = async (db: Db): Promise<Array<{ queue_id: string; state: string; count: number }>> => {
  const { rows } = await db.query<{ queue_id: string; state: string; n: string }>(
    `SELECT queue_id, state::text, count(*)::text AS n FROM jobs GROUP BY 1, 2
     UNION ALL
     SELECT queue_id, state::text, count(*)::text FROM finished_jobs GROUP BY 1, 2`,
  );
  return rows.map((r) => ({ queue_id: r.queue_id, state: r.state, count: Number(r.n) }));
};
