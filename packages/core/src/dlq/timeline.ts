import type { Db } from "../db";
import type { EventRow } from "../reads/timeline";

/**
 * The triage events a job's timeline shows: those of the failure groups it died into (dlq_deaths,
 * by its job_id index) from the moment it first died into each, and those of its own triage
 * (dlq_events with its job_id and no group). Kinds are prefixed `dlq.` (dlq.assigned,
 * dlq.status, dlq.reason, dlq.note, dlq.reopened, …); data carries the group id and the note.
 */
export const dlqTimelineEvents = async (db: Db, jobId: string): Promise<EventRow[]> => {
  const { rows } = await db.query<EventRow>(
    `WITH groups AS (SELECT group_id, min(died_at) AS since FROM dlq_deaths WHERE job_id = $1 GROUP BY group_id)
     SELECT e.at, 'dlq.' || e.kind AS kind, NULL::int AS attempt, e.actor,
            jsonb_strip_nulls(jsonb_build_object('group_id', e.group_id::text, 'body', e.body)) || coalesce(e.data, '{}'::jsonb) AS data
       FROM dlq_events e JOIN groups g ON g.group_id = e.group_id
      WHERE e.at >= g.since
     UNION ALL
     SELECT e.at, 'dlq.' || e.kind, NULL, e.actor, jsonb_strip_nulls(jsonb_build_object('body', e.body)) || coalesce(e.data, '{}'::jsonb)
       FROM dlq_events e WHERE e.job_id = $1 AND e.group_id IS NULL
      ORDER BY 1`,
    [jobId],
  );
  return rows;
};
