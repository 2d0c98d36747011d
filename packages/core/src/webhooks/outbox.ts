// Draining the webhook outbox (the maintenance leader, every tick). The finished_jobs trigger
// (routines/webhooks.sql) leaves one row per (endpoint, job, terminal state, redrive count); each is turned into
// one `webhook.deliver` job through the normal enqueue — under the endpoint's tenant, idempotency
// key `wh:<endpoint>:<job>:<state>[:r<redrives>]` — and deleted in the same transaction, so a crash between the
// two loses nothing and sends nothing twice. Rows are locked FOR UPDATE SKIP LOCKED: two drains
// (a leader hand-over) never take the same row, and the idempotency key holds even if they did.
import type { TenantWebhookBody, TerminalState } from "@porter/contracts";
import type pg from "pg";
import { type Db, inOwnTransaction } from "../db";
import { WEBHOOK_DELIVER_JOB_TYPE, webhookEndpointRef } from "../dlq/alerts";
import { safeFailure } from "../reads/safe-failure";
import { enqueueJobs } from "../sql/enqueue-jobs";

/** A succeeded job's result is in the body when its JSON is at most this long; a longer one is left out (`result` absent). */
export const WEBHOOK_RESULT_MAX_BYTES = 16 * 1024;

export type OutboxReport = {
  /** Delivery jobs enqueued (new or already there under the same key). */
  enqueued: number;
  /** Rows whose key had been used by another delivery already (a redriven job dying again): dropped. */
  duplicates: number;
  /** Rows whose enqueue was refused (admission, an unregistered job type): kept for the next tick. */
  errors: Array<{ endpointId: string; jobId: string; message: string }>;
};

type OutboxRow = {
  id: string;
  endpoint_id: string;
  job_id: string;
  state: TerminalState;
  job_type: string;
  tenant_id: string;
  attempt: number;
  redrive_count: number;
  finished_at: Date;
  result: unknown;
  error: unknown;
  endpoint_tenant_id: string | null;
};

/**
 * The event id of a job's terminal state: the `webhook-id` header, the same on every attempt of
 * the delivery. A redriven job that finishes again is a new event (`_r<n>`, n its redrive count).
 */
export const webhookEventId = (jobId: string, state: TerminalState, redriveCount = 0): string =>
  `evt_${jobId.replace(/-/g, "")}_${state.toLowerCase()}${redriveCount > 0 ? `_r${redriveCount}` : ""}`;

/** The delivery job's idempotency key: one delivery per (endpoint, job, state, redrive count). */
export const webhookDeliveryKey = (endpointId: string, jobId: string, state: TerminalState, redriveCount = 0): string =>
  `wh:${endpointId}:${jobId}:${state.toLowerCase()}${redriveCount > 0 ? `:r${redriveCount}` : ""}`;

/** The body a tenant endpoint receives for one row (ZTenantWebhookBody). `result` only on success, capped. */
export const tenantWebhookBody = (row: Omit<OutboxRow, "id" | "endpoint_id" | "endpoint_tenant_id">, now: Date): TenantWebhookBody => {
  const data: TenantWebhookBody["data"] = {
    job_id: row.job_id,
    job_type: row.job_type,
    tenant_id: row.tenant_id,
    status: row.state,
    attempt: row.attempt,
    finished_at: row.finished_at.toISOString(),
    failure: row.state === "SUCCEEDED" ? null : safeFailure(row.error),
  };
  if (row.state === "SUCCEEDED" && row.result !== null && row.result !== undefined) {
    if (Buffer.byteLength(JSON.stringify(row.result)) <= WEBHOOK_RESULT_MAX_BYTES) data.result = row.result;
  }
  return { type: `job.${row.state.toLowerCase()}` as TenantWebhookBody["type"], timestamp: now.toISOString(), data };
};

const isConflict = (error: unknown) => typeof error === "object" && error !== null && (error as { code?: unknown }).code === "CONFLICT";

/**
 * One drain of up to `batch` outbox rows, in a transaction of its own (on a client: BEGIN …
 * COMMIT on it). A savepoint per row: a refused enqueue keeps that row for the next tick and
 * costs no other. A row whose endpoint was deleted meanwhile is dropped.
 */
export const drainWebhookOutbox = async (db: Db, params: { batch?: number } = {}): Promise<OutboxReport> =>
  inOwnTransaction(db, async (client: pg.PoolClient | pg.Client) => {
    const report: OutboxReport = { enqueued: 0, duplicates: 0, errors: [] };
    const { rows } = await client.query<OutboxRow>(
      `SELECT o.id::text, o.endpoint_id, o.job_id::text, o.state, o.job_type, o.tenant_id, o.attempt, o.redrive_count, o.finished_at, o.result, o.error,
              e.tenant_id AS endpoint_tenant_id
         FROM webhook_outbox o LEFT JOIN webhook_endpoints e ON e.id = o.endpoint_id AND e.scope = 'tenant'
        ORDER BY o.id LIMIT $1 FOR UPDATE OF o SKIP LOCKED`,
      [params.batch ?? 500],
    );
    if (rows.length === 0) return report;
    const done: string[] = [];
    const now = new Date();
    for (const row of rows) {
      if (!row.endpoint_tenant_id) {
        done.push(row.id);
        continue;
      }
      const event = { id: webhookEventId(row.job_id, row.state, row.redrive_count), ...tenantWebhookBody(row, now) };
      await client.query("SAVEPOINT porter_webhook_outbox");
      try {
        await enqueueJobs(client, [
          {
            job_type: WEBHOOK_DELIVER_JOB_TYPE,
            tenant_id: row.endpoint_tenant_id,
            payload: { endpoint_ref: webhookEndpointRef(row.endpoint_id), event },
            idempotency_key: webhookDeliveryKey(row.endpoint_id, row.job_id, row.state, row.redrive_count),
          },
        ]);
        await client.query("RELEASE SAVEPOINT porter_webhook_outbox");
        report.enqueued++;
        done.push(row.id);
      } catch (error) {
        await client.query("ROLLBACK TO SAVEPOINT porter_webhook_outbox");
        if (isConflict(error)) {
          report.duplicates++;
          done.push(row.id);
        } else report.errors.push({ endpointId: row.endpoint_id, jobId: row.job_id, message: error instanceof Error ? error.message : String(error) });
      }
    }
    if (done.length) await client.query(`DELETE FROM webhook_outbox WHERE id = ANY($1::bigint[])`, [done]);
    return report;
  });
