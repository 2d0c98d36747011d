import { z } from "zod";
import { payloadIssue, ZDateTime, ZStorableText } from "./storable";
import { parseTraceparent, ZTraceparent } from "./trace";

/** Wire name and version of the job contract. */
export const JOB_CONTRACT = "job.v1" as const;
export const JOB_CONTRACT_VERSION = "1.0" as const;

/** Default ceiling of a payload's serialized size; larger payloads must pass a reference. */
export const DEFAULT_MAX_PAYLOAD_BYTES = 64 * 1024;

/** Every state a job can be in; see @porter/core `state.ts` for who moves jobs between them. */
export const JOB_STATES = ["READY", "RUNNING", "RETRY_WAIT", "SUCCEEDED", "DEAD", "CANCELLED", "EXPIRED"] as const;
export const ZJobState = z.enum(JOB_STATES);
export type TJobState = z.infer<typeof ZJobState>;

const ZIdentifier = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[A-Za-z0-9][A-Za-z0-9._:-]*$/, "letters, digits and . _ : - only");

/**
 * A payload is a small JSON object of references (source_ref, artifact_ref, version, hash…):
 * nested at most MAX_PAYLOAD_DEPTH levels, every key and string storable text, numbers finite
 * (see `payloadIssue`). Its size is checked where it is serialized (413 past the limit).
 */
export const ZPayload = z.record(z.string(), z.unknown()).superRefine((payload, ctx) => {
  const issue = payloadIssue(payload);
  if (issue) ctx.addIssue({ code: "custom", path: issue.path, message: issue.message });
});
/** A payload as the server returns it (already checked when it was accepted). */
const ZStoredPayload = z.record(z.string(), z.unknown());

/**
 * What a producer sends: the job.v1 envelope without server fields (`job_id`, `attempt`,
 * `created_at`). `tenant_id` may be omitted when the API key is scoped to exactly one tenant.
 * Unknown fields are refused (allow-list). `deadline_at` must be later than `not_before`.
 */
export const ZEnqueueRequest = z
  .strictObject({
    contract: z.literal(JOB_CONTRACT).optional(),
    contract_version: z.literal(JOB_CONTRACT_VERSION).optional(),
    job_type: ZIdentifier,
    tenant_id: ZIdentifier.optional(),
    payload: ZPayload,
    priority: z.number().int().min(0).max(100).optional(),
    idempotency_key: ZStorableText.min(1).max(200),
    max_attempts: z.number().int().min(1).max(1000).optional(),
    timeout_s: z.number().int().min(1).max(86_400).optional(),
    not_before: ZDateTime.optional(),
    deadline_at: ZDateTime.optional(),
    trace_id: ZStorableText.min(1).max(128).optional(),
    /**
     * The W3C traceparent the job is enqueued under (a `traceparent` header applies to the jobs of
     * a call that carry neither this nor `trace_id`). The job's trace_id is its trace id.
     */
    traceparent: ZTraceparent.optional(),
  })
  .superRefine((request, ctx) => {
    const parent = parseTraceparent(request.traceparent);
    if (parent && request.trace_id !== undefined && request.trace_id !== parent.traceId) {
      ctx.addIssue({ code: "custom", path: ["trace_id"], message: "must be the traceparent's trace id (or be omitted: it is taken from the traceparent)" });
    }
    if (request.not_before && request.deadline_at && Date.parse(request.deadline_at) <= Date.parse(request.not_before)) {
      ctx.addIssue({ code: "custom", path: ["deadline_at"], message: "must be later than not_before: the job could never run" });
    }
  });
export type TEnqueueRequest = z.infer<typeof ZEnqueueRequest>;

export const MAX_BATCH_SIZE = 1000;
export const ZEnqueueBatchRequest = z.strictObject({
  jobs: z.array(ZEnqueueRequest).min(1).max(MAX_BATCH_SIZE),
});
export type TEnqueueBatchRequest = z.infer<typeof ZEnqueueBatchRequest>;

export const ZEnqueueResult = z.object({
  job_id: z.uuid(),
  status: ZJobState,
  deduplicated: z.boolean(),
});
export type TEnqueueResult = z.infer<typeof ZEnqueueResult>;

/** Structured error of a failed attempt or a dead job. Never holds secrets or stack traces of hosts. */
export const ZJobError = z.object({
  code: z.string(),
  class: z.enum(["retryable", "permanent", "timeout", "lease_expired", "cancelled", "expired"]),
  message: z.string(),
  worker_version: z.string().nullable(),
  attempt: z.number().int(),
  trace_id: z.string(),
  last_checkpoint: z.unknown().nullable(),
});
export type TJobError = z.infer<typeof ZJobError>;

/**
 * A running attempt's last progress (`ctx.progress`): any of fraction 0..1, message ≤ 200 and
 * step ≤ 100 characters (the SDK validates what a handler reports; @porter/sdk `validateProgress`).
 */
export const ZJobProgress = z.object({
  fraction: z.number().min(0).max(1).optional(),
  message: z.string().max(200).optional(),
  step: z.string().max(100).optional(),
});
export type TJobProgress = z.infer<typeof ZJobProgress>;

export const ZTimelineEvent = z.object({
  at: z.string(),
  kind: z.string(),
  attempt: z.number().int().nullable(),
  actor: z.string().nullable(),
  data: z.record(z.string(), z.unknown()).nullable(),
});
export type TTimelineEvent = z.infer<typeof ZTimelineEvent>;

/** The full job.v1 envelope as the server returns it. */
export const ZJobEnvelope = z.object({
  contract: z.literal(JOB_CONTRACT),
  contract_version: z.string(),
  job_id: z.uuid(),
  job_type: z.string(),
  tenant_id: z.string(),
  payload: ZStoredPayload,
  priority: z.number().int(),
  idempotency_key: z.string(),
  attempt: z.number().int(),
  max_attempts: z.number().int(),
  timeout_s: z.number().int(),
  not_before: z.string().nullable(),
  deadline_at: z.string().nullable(),
  trace_id: z.string(),
  /** The W3C traceparent the job was enqueued under, null if none. Absent from older servers. */
  traceparent: z.string().nullish(),
  created_at: z.string(),
});
export type TJobEnvelope = z.infer<typeof ZJobEnvelope>;

/** What `producer.get` returns: the envelope plus where the job is now. */
export const ZJobStatus = ZJobEnvelope.extend({
  status: ZJobState,
  queue_id: z.string(),
  run_at: z.string().nullable(),
  finished_at: z.string().nullable(),
  cancel_requested: z.boolean(),
  partial: z.boolean(),
  result: z.unknown().nullable(),
  error: ZJobError.nullable(),
  /** The last progress its (current or last) attempt reported; a new attempt starts without. Absent from older servers. */
  progress: ZJobProgress.nullish(),
  /** The job's last durable checkpoint (`ctx.checkpoint`, ≤ 16 KiB of JSON), kept across attempts. Absent from older servers. */
  checkpoint: z.unknown().nullish(),
  timeline: z.array(ZTimelineEvent),
});
export type TJobStatus = z.infer<typeof ZJobStatus>;

export const ZGetJobRequest = z.strictObject({ job_id: z.uuid() });
export const ZCancelJobRequest = z.strictObject({
  job_id: z.uuid(),
  reason: ZStorableText.max(500).optional(),
});
export const ZCancelJobResult = z.object({ job_id: z.uuid(), status: ZJobState });
