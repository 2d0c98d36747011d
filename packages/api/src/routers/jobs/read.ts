import { AppError, JOB_STATES, ZJobState, ZJobStatus } from "@porter/contracts";
import { countJobsByState, dlqErrorCodes, getJob, listAttempts, listJobs } from "@porter/core";
import { z } from "zod";
import { ZJobFilter, ZJobsCursor } from "../../schemas/jobs";
import { viewerReadProcedure } from "../../trpc";
import { toCoreFilter } from "./filter";

const ZJobListRow = z.object({
  job_id: z.string(),
  job_type: z.string(),
  queue_id: z.string(),
  tenant_id: z.string(),
  state: ZJobState,
  priority: z.number().int(),
  attempt: z.number().int(),
  max_attempts: z.number().int(),
  idempotency_key: z.string(),
  trace_id: z.string(),
  created_at: z.string(),
  run_at: z.string().nullable(),
  finished_at: z.string().nullable(),
  cancel_requested: z.boolean(),
  error_code: z.string().nullable(),
  error_message: z.string().nullable(),
});

const ZAttempt = z.object({
  run: z.number().int(),
  attempt: z.number().int(),
  redrive: z.number().int(),
  worker_id: z.string().nullable(),
  available_at: z.string(),
  wait_ms: z.number(),
  started_at: z.string(),
  finished_at: z.string().nullable(),
  duration_ms: z.number().nullable(),
  heartbeat_at: z.string().nullable(),
  outcome: z.string(),
  error: z.record(z.string(), z.unknown()).nullable(),
  retry_at: z.string().nullable(),
});

/** A page of jobs, newest first, live and finished together (cursor from the previous page). */
export const list = viewerReadProcedure
  .input(
    z.strictObject({
      filter: ZJobFilter.default({}),
      cursor: ZJobsCursor.nullish(),
      limit: z.number().int().min(1).max(200).default(50),
      /** Sent by tRPC's infinite queries; pages only go forward (older). */
      direction: z.enum(["forward", "backward"]).optional(),
    }),
  )
  .output(z.object({ jobs: z.array(ZJobListRow), next_cursor: z.string().nullable() }))
  .query(({ ctx, input }) => listJobs(ctx.db, { filter: toCoreFilter(input.filter), cursor: input.cursor ?? null, limit: input.limit }));

/** Jobs matching the filter per state (the filter's own states ignored): the browser's sidebar. */
export const counts = viewerReadProcedure
  .input(z.strictObject({ filter: ZJobFilter.default({}) }))
  .output(z.record(z.enum(JOB_STATES), z.number().int()))
  .query(({ ctx, input }) => countJobsByState(ctx.db, toCoreFilter(input.filter)));

/** One job: envelope, result or structured error, the full timeline, and its attempts side by side. */
export const get = viewerReadProcedure
  .input(z.strictObject({ job_id: z.uuid() }))
  .output(ZJobStatus.extend({ attempts: z.array(ZAttempt) }))
  .query(async ({ ctx, input }) => {
    const job = await getJob(ctx.db, input.job_id);
    if (!job) throw new AppError("NOT_FOUND", { message: `job ${input.job_id} not found` });
    return { ...job, attempts: await listAttempts(ctx.db, input.job_id) };
  });

/** The error codes DEAD jobs carry now, with counts (from the failure groups, not a scan): the browser's error-code filter. */
export const errorCodes = viewerReadProcedure
  .input(z.strictObject({}).default({}))
  .output(z.strictObject({ codes: z.array(z.strictObject({ code: z.string(), count: z.number().int() })) }))
  .query(async ({ ctx }) => ({ codes: await dlqErrorCodes(ctx.db) }));
