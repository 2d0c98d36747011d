import { z } from "zod";
import { JOB_STATES, ZJobProgress } from "./job";

// What a tenant sees of its jobs (issue 13): the live status stream's events, the tenant-safe
// failure projection, and the terminal-state webhook's event. One contract for every channel —
// the status page, `GET /api/events`, the webhooks and the SDK's `watch`/`waitFor` — so a tenant
// reads the same shape wherever it looks. None of these channels is the source of truth; the job
// row is.

export const TERMINAL_STATES = ["SUCCEEDED", "DEAD", "CANCELLED", "EXPIRED"] as const;
export type TerminalState = (typeof TERMINAL_STATES)[number];

/**
 * A failure as a tenant may see it: the error's code and class, and a message with hosts, URLs,
 * paths, stack frames and anything credential-like removed (core's `safeFailure` projects it; the
 * raw error never leaves the operator's side).
 */
export const ZSafeFailure = z.strictObject({
  code: z.string().max(100).nullable(),
  class: z.enum(["retryable", "permanent", "timeout", "lease_expired", "cancelled", "expired"]),
  message: z.string().max(300),
});
export type SafeFailure = z.infer<typeof ZSafeFailure>;

/** The SSE event names: one per state (`job.ready` … `job.expired`) and `job.progress`. */
export const STREAM_EVENT_NAMES = [...JOB_STATES.map((s) => `job.${s.toLowerCase()}` as const), "job.progress"] as const;
export type StreamEventName = (typeof STREAM_EVENT_NAMES)[number];

/**
 * The data of one status-stream event (`GET /api/events`, `/status/<tenant_id>/events`), JSON in
 * the SSE `data:` field. `id` (the SSE `id:` field, also here) is an opaque, totally ordered cursor:
 * a client that reconnects with `Last-Event-ID: <id>` receives every event after it. `status` is
 * the state the job is in after the event; `progress` is the attempt's last progress (null when
 * none); `failure` the tenant-safe projection of the attempt's error on `job.retry_wait`,
 * `job.dead` and `job.expired` (null otherwise).
 */
export const ZStreamEventData = z.strictObject({
  id: z.string().min(1).max(100),
  job_id: z.uuid(),
  job_type: z.string(),
  status: z.enum(JOB_STATES),
  attempt: z.number().int().min(0),
  progress: ZJobProgress.nullable(),
  failure: ZSafeFailure.nullable(),
  at: z.string(),
});
export type StreamEventData = z.infer<typeof ZStreamEventData>;

/** One event as the SDK's `watch` yields it. */
export type StreamEvent = { id: string; event: StreamEventName; data: StreamEventData };

/** The events a tenant webhook endpoint may subscribe to (terminal states only). */
export const WEBHOOK_EVENTS = ["succeeded", "dead", "cancelled", "expired"] as const;
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];

/**
 * The body of a tenant webhook delivery (POSTed JSON, signed per Standard Webhooks: the
 * `webhook-id` header is `event id`, the same on every retry of the delivery). `type` is
 * `job.succeeded | job.dead | job.cancelled | job.expired`; `data.failure` is the tenant-safe
 * projection (never the raw error); `data.result` the handler's result on success.
 */
export const ZTenantWebhookBody = z.strictObject({
  type: z.enum(["job.succeeded", "job.dead", "job.cancelled", "job.expired"]),
  timestamp: z.string(),
  data: z.strictObject({
    job_id: z.uuid(),
    job_type: z.string(),
    tenant_id: z.string(),
    status: z.enum(TERMINAL_STATES),
    attempt: z.number().int().min(0),
    finished_at: z.string(),
    result: z.unknown().optional(),
    failure: ZSafeFailure.nullable(),
  }),
});
export type TenantWebhookBody = z.infer<typeof ZTenantWebhookBody>;
