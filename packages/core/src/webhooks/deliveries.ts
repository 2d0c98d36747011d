// The webhook delivery log: one row per attempt (the webhook.deliver handler writes it, one
// INSERT in its own statement; the delivery job's attempt record stays the source of truth),
// listed newest first by cursor, pruned after 14 days by maintenance.
import { AppError } from "@porter/contracts";
import type { ControlDb } from "@porter/db/prisma";
import type { Db } from "../db";

/** One attempt as the console and CLI list it. */
export type WebhookDeliveryView = {
  id: string;
  endpoint_id: string;
  job_id: string;
  event_id: string;
  event_type: string;
  subject_job_id: string | null;
  attempt: number;
  status_code: number | null;
  error: string | null;
  duration_ms: number;
  at: string;
};

/** What the handler records of one attempt. `error` must name the host only (never a URL's path or query). */
export type WebhookDeliveryRecord = {
  endpointId: string;
  jobId: string;
  eventId: string;
  eventType: string;
  subjectJobId: string | null;
  attempt: number;
  statusCode: number | null;
  error: string | null;
  durationMs: number;
};

/** Writes one attempt's row (a statement of its own). */
export const recordWebhookDelivery = async (db: Db, r: WebhookDeliveryRecord): Promise<void> => {
  await db.query(
    `INSERT INTO webhook_deliveries (endpoint_id, job_id, event_id, event_type, subject_job_id, attempt, status_code, error, duration_ms)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
    [
      r.endpointId,
      r.jobId,
      r.eventId,
      r.eventType,
      r.subjectJobId,
      r.attempt,
      r.statusCode,
      r.error?.slice(0, 500) ?? null,
      Math.max(0, Math.round(r.durationMs)),
    ],
  );
};

/** An endpoint's attempts, newest first: `limit` rows after `cursor` (the last row's id), and the next cursor or null. */
export const listWebhookDeliveries = async (
  db: ControlDb,
  params: { endpointId: string; cursor?: string | null; limit?: number },
): Promise<{ items: WebhookDeliveryView[]; next_cursor: string | null }> => {
  const limit = params.limit ?? 50;
  let before: bigint | undefined;
  if (params.cursor) {
    if (!/^\d{1,19}$/.test(params.cursor)) throw new AppError("BAD_REQUEST", { message: "invalid cursor" });
    before = BigInt(params.cursor);
  }
  const rows = await db.webhookDelivery.findMany({
    where: { endpointId: params.endpointId, ...(before !== undefined ? { id: { lt: before } } : {}) },
    orderBy: { id: "desc" },
    take: limit + 1,
  });
  const items = rows.slice(0, limit).map((r) => ({
    id: r.id.toString(),
    endpoint_id: r.endpointId,
    job_id: r.jobId,
    event_id: r.eventId,
    event_type: r.eventType,
    subject_job_id: r.subjectJobId,
    attempt: r.attempt,
    status_code: r.statusCode,
    error: r.error,
    duration_ms: r.durationMs,
    at: r.at.toISOString(),
  }));
  return { items, next_cursor: rows.length > limit ? items[items.length - 1]!.id : null };
};

/** How long delivery log rows are kept. */
export const WEBHOOK_DELIVERIES_RETENTION_MS = 14 * 86400_000;

/** Deletes delivery log rows older than 14 days, in batches (maintenance). Returns how many. */
export const pruneWebhookDeliveries = async (db: Db, params: { now?: Date; batch?: number } = {}): Promise<number> => {
  const cutoff = new Date((params.now ?? new Date()).getTime() - WEBHOOK_DELIVERIES_RETENTION_MS);
  const { rowCount } = await db.query(`DELETE FROM webhook_deliveries WHERE id IN (SELECT id FROM webhook_deliveries WHERE at < $1 ORDER BY at LIMIT $2)`, [
    cutoff,
    params.batch ?? 5000,
  ]);
  return rowCount ?? 0;
};
