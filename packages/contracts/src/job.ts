import { z } from "zod";
import { payloadIssue, unstorableTextReason, ZDateTime, ZStorableText } from "./storable";
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

/** A job type or tenant id: 1–200 characters, letters, digits and `. _ : -`, a letter or digit first. */
const IDENTIFIER = /^[A-Za-z0-9][A-Za-z0-9._:-]*$/;
const IDENTIFIER_MAX = 200;
const ZIdentifier = z.string().min(1).max(IDENTIFIER_MAX).regex(IDENTIFIER, "letters, digits and . _ : - only");

/** The bounds of the enqueue request's integer fields and the key's length (the schema's and `acceptEnqueueRequest`'s). */
const ENQUEUE_BOUNDS = {
  priority: [0, 100],
  max_attempts: [1, 1000],
  timeout_s: [1, 86_400],
  idempotency_key: [1, 200],
} as const;

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
    priority: z.number().int().min(ENQUEUE_BOUNDS.priority[0]).max(ENQUEUE_BOUNDS.priority[1]).optional(),
    idempotency_key: ZStorableText.min(ENQUEUE_BOUNDS.idempotency_key[0]).max(ENQUEUE_BOUNDS.idempotency_key[1]),
    max_attempts: z.number().int().min(ENQUEUE_BOUNDS.max_attempts[0]).max(ENQUEUE_BOUNDS.max_attempts[1]).optional(),
    timeout_s: z.number().int().min(ENQUEUE_BOUNDS.timeout_s[0]).max(ENQUEUE_BOUNDS.timeout_s[1]).optional(),
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

// ---------------------------------------------------------------------------------------------
// The producer API's common requests, accepted without zod's machinery.
//
// The API server parses every enqueue with the schemas above. For a 1000-job batch that was the
// largest part of the server's own CPU per call — ≈ 3.5 ms of ≈ 16, added in series to every call
// (docs/performance.md "Issue 15: the HTTP producer API", fifth pass). The functions below accept
// the request most producers send — the fields job_type, tenant_id, payload, idempotency_key,
// priority, max_attempts, timeout_s and the contract's literals, in plain objects — checking the
// same rules with the same helpers (IDENTIFIER, ENQUEUE_BOUNDS, unstorableTextReason,
// payloadIssue). They are an exact subset of the schemas: whatever they accept, the schema accepts
// with an equal output (job.accept.test.ts checks it on generated inputs, valid and not). Anything
// else — another field, a date, a trace, an object that is not plain, and every invalid request —
// returns undefined, and the caller parses with the schema, which accepts it or says why not. So
// the schema stays the one definition of a valid request and the source of every 400.

const isIdentifier = (value: unknown): value is string =>
  typeof value === "string" && value.length >= 1 && value.length <= IDENTIFIER_MAX && IDENTIFIER.test(value);

const isIntIn = (value: unknown, [min, max]: readonly [number, number]): value is number =>
  typeof value === "number" && Number.isInteger(value) && value >= min && value <= max;

const isLengthIn = (value: string, [min, max]: readonly [number, number]): boolean => value.length >= min && value.length <= max;

/** A plain object as `JSON.parse` makes them: Object.prototype, no own `__proto__`, no symbol keys. */
const isJsonObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object"
  && value !== null
  && Object.getPrototypeOf(value) === Object.prototype
  && !Object.hasOwn(value, "__proto__")
  && Object.getOwnPropertySymbols(value).length === 0;

/**
 * `ZEnqueueRequest`'s output for `value` when `value` is a common request that is valid, else
 * undefined (parse it with the schema). The output is a new object, as the schema's is; its
 * payload is the request's own (the schema copies its top level: equal, and nothing mutates it).
 */
export const acceptEnqueueRequest = (value: unknown): TEnqueueRequest | undefined => {
  if (!isJsonObject(value)) return undefined;
  // Each field read once, by name, as the schema reads it.
  const { job_type, tenant_id, payload, idempotency_key, priority, max_attempts, timeout_s, contract, contract_version } = value;
  if (!isIdentifier(job_type)) return undefined;
  if (typeof idempotency_key !== "string" || !isLengthIn(idempotency_key, ENQUEUE_BOUNDS.idempotency_key) || unstorableTextReason(idempotency_key)) {
    return undefined;
  }
  if (!isJsonObject(payload) || payloadIssue(payload) !== null) return undefined;
  const out: TEnqueueRequest = { job_type, payload, idempotency_key };
  let fields = 3;
  if (tenant_id !== undefined) {
    if (!isIdentifier(tenant_id)) return undefined;
    out.tenant_id = tenant_id;
    fields++;
  }
  if (priority !== undefined) {
    if (!isIntIn(priority, ENQUEUE_BOUNDS.priority)) return undefined;
    out.priority = priority;
    fields++;
  }
  if (max_attempts !== undefined) {
    if (!isIntIn(max_attempts, ENQUEUE_BOUNDS.max_attempts)) return undefined;
    out.max_attempts = max_attempts;
    fields++;
  }
  if (timeout_s !== undefined) {
    if (!isIntIn(timeout_s, ENQUEUE_BOUNDS.timeout_s)) return undefined;
    out.timeout_s = timeout_s;
    fields++;
  }
  if (contract !== undefined) {
    if (contract !== JOB_CONTRACT) return undefined;
    out.contract = contract;
    fields++;
  }
  if (contract_version !== undefined) {
    if (contract_version !== JOB_CONTRACT_VERSION) return undefined;
    out.contract_version = contract_version;
    fields++;
  }
  // The fields read above are exactly the object's enumerable keys: no other key (the schema
  // refuses it, or checks it: dates, traces), no key holding undefined, no hidden or inherited
  // field. `out` holds each field read that was there; equal counts and every key in `out` say so.
  const keys = Object.keys(value);
  if (keys.length !== fields) return undefined;
  for (const key of keys) if (!Object.hasOwn(out, key)) return undefined;
  return out;
};

/** `ZEnqueueBatchRequest`'s output for a batch of common, valid requests, else undefined. */
export const acceptEnqueueBatchRequest = (value: unknown): TEnqueueBatchRequest | undefined => {
  if (!isJsonObject(value)) return undefined;
  const { jobs } = value;
  const keys = Object.keys(value);
  if (keys.length !== 1 || keys[0] !== "jobs" || !Array.isArray(jobs) || jobs.length < 1 || jobs.length > MAX_BATCH_SIZE) return undefined;
  const out: TEnqueueRequest[] = new Array(jobs.length);
  for (let i = 0; i < jobs.length; i++) {
    const job = acceptEnqueueRequest(jobs[i]);
    if (job === undefined) return undefined;
    out[i] = job;
  }
  return { jobs: out };
};

const UUID = z.core.regexes.uuid();
const STATES: ReadonlySet<unknown> = new Set(JOB_STATES);

/** `ZEnqueueResult`'s output for a well-formed result (what core's enqueue returns), else undefined. */
export const acceptEnqueueResult = (value: unknown): TEnqueueResult | undefined => {
  if (typeof value !== "object" || value === null) return undefined;
  const { job_id, status, deduplicated } = value as Record<string, unknown>;
  return typeof job_id === "string" && UUID.test(job_id) && STATES.has(status) && typeof deduplicated === "boolean"
    ? { job_id, status: status as TJobState, deduplicated }
    : undefined;
};

/** The batch's output, `{ results }`, when every result is well-formed, else undefined. */
export const acceptEnqueueResults = (value: unknown): { results: TEnqueueResult[] } | undefined => {
  if (typeof value !== "object" || value === null) return undefined;
  const { results } = value as Record<string, unknown>;
  if (!Array.isArray(results)) return undefined;
  const out: TEnqueueResult[] = new Array(results.length);
  for (let i = 0; i < results.length; i++) {
    const result = acceptEnqueueResult(results[i]);
    if (result === undefined) return undefined;
    out[i] = result;
  }
  return { results: out };
};

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
