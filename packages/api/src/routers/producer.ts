import {
  AppError,
  acceptEnqueueBatchRequest,
  acceptEnqueueRequest,
  acceptEnqueueResult,
  acceptEnqueueResults,
  type TEnqueueRequest,
  ZCancelJobRequest,
  ZCancelJobResult,
  ZEnqueueBatchRequest,
  ZEnqueueRequest,
  ZEnqueueResult,
  ZGetJobRequest,
  ZJobStatus,
  ZTraceparent,
} from "@porter/contracts";
import { type ApiKeyScope, cancelJob, type EnqueueInput, enqueueJobs, getJob } from "@porter/core";
import { z } from "zod";
import type { RequestHead } from "../context";
import { createTRPCRouter, parsedSync, producerProcedure } from "../trpc";

/**
 * The job types a key may enqueue and see, as core's lookups take them (undefined = every type,
 * the key's ["*"]): jobs of other types are reported as absent, exactly like another tenant's.
 */
const visibleJobTypes = (scope: ApiKeyScope): readonly string[] | undefined => (scope.jobTypes.includes("*") ? undefined : scope.jobTypes);

/**
 * Resolves the tenant of each request from the key's scope and checks the job type, before
 * anything is stored: the body's tenant_id may narrow the scope, never widen it. With
 * `index`, errors name the batch item. It writes the tenant into `request` — the procedure's
 * parsed input, an object zod built for this call alone — and returns it: copying each job of a
 * 1000-job batch was a tenth of the server's CPU per call (docs/performance.md, "Fourth pass").
 */
export const scopeEnqueueRequest = (scope: ApiKeyScope, request: TEnqueueRequest, index?: number): EnqueueInput => {
  let tenantId = request.tenant_id;
  if (tenantId === undefined) {
    if (scope.tenantIds.length !== 1) {
      throw new AppError("BAD_REQUEST", {
        message: `${itemPrefix(index)}tenant_id is required: this API key is scoped to ${scope.tenantIds.length} tenants`,
        details: { ...itemAt(index), tenants: scope.tenantIds },
      });
    }
    tenantId = scope.tenantIds[0]!;
  } else if (!scope.tenantIds.includes(tenantId)) {
    throw new AppError("FORBIDDEN", {
      message: `${itemPrefix(index)}this API key may not enqueue for tenant "${tenantId}"`,
      details: { ...itemAt(index), tenant_id: tenantId },
    });
  }
  if (visibleJobTypes(scope)?.includes(request.job_type) === false) {
    throw new AppError("FORBIDDEN", {
      message: `${itemPrefix(index)}this API key may not enqueue job type "${request.job_type}"`,
      details: { ...itemAt(index), job_type: request.job_type },
    });
  }
  request.tenant_id = tenantId;
  return request as EnqueueInput;
};

// Built only for an error: scopeEnqueueRequest runs once per job of a 1000-job batch.
/** A batch item's place in an error message (`jobs[3]: `), or nothing for a single enqueue. */
const itemPrefix = (index: number | undefined): string => (index === undefined ? "" : `jobs[${index}]: `);
/** A batch item's place in an error's details. */
const itemAt = (index: number | undefined): { index?: number } => (index === undefined ? {} : { index });

/**
 * The call's W3C `traceparent` header (docs/observability.md "Traces"): the parent of its
 * `porter.enqueue` span and the trace of its jobs that carry neither `traceparent` nor `trace_id`.
 * An invalid one is a 400 naming the header (nothing is stored), as an invalid field is.
 */
export const traceparentHeader = (req: RequestHead): string | undefined => {
  const value = req.headers.get("traceparent");
  if (value === null) return undefined;
  const parsed = ZTraceparent.safeParse(value.trim());
  if (!parsed.success) {
    throw new AppError("BAD_REQUEST", {
      message: `traceparent header: ${parsed.error.issues[0]?.message ?? "invalid"}`,
      details: { header: "traceparent" },
    });
  }
  return parsed.data;
};

/**
 * The producer API (DESIGN "Producer procedures"): enqueue, enqueueBatch, get, cancel. Its
 * schemas are parsed synchronously (`parsedSync`): the hot path of every producer.
 */
export const producerRouter = createTRPCRouter({
  /** Enqueues one job; the same (tenant, idempotency_key) and payload returns the same job. */
  enqueue: producerProcedure
    .input(parsedSync(ZEnqueueRequest, acceptEnqueueRequest))
    .output(parsedSync(ZEnqueueResult, acceptEnqueueResult))
    .mutation(async ({ ctx, input }) => {
      const scoped = scopeEnqueueRequest(ctx.apiKey, input);
      const traceparent = traceparentHeader(ctx.req);
      const [result] = await enqueueJobs(ctx.db, [scoped], { policyCache: ctx.policyCache, maxPayloadBytes: ctx.maxPayloadBytes, traceparent });
      return result!;
    }),

  /** Enqueues up to 1000 jobs in one transaction: all are stored, or (on any error) none. */
  enqueueBatch: producerProcedure
    .input(parsedSync(ZEnqueueBatchRequest, acceptEnqueueBatchRequest))
    .output(parsedSync(z.object({ results: z.array(ZEnqueueResult) }), acceptEnqueueResults))
    .mutation(async ({ ctx, input }) => {
      const scoped = input.jobs.map((job, index) => scopeEnqueueRequest(ctx.apiKey, job, index));
      const traceparent = traceparentHeader(ctx.req);
      const results = await enqueueJobs(ctx.db, scoped, { policyCache: ctx.policyCache, maxPayloadBytes: ctx.maxPayloadBytes, traceparent });
      return { results };
    }),

  /** A job of the key's tenants and job types with its status and timeline; anything else is a 404. */
  get: producerProcedure
    .input(parsedSync(ZGetJobRequest))
    .output(parsedSync(ZJobStatus))
    .query(async ({ ctx, input }) => {
      const job = await getJob(ctx.db, input.job_id, { tenantIds: ctx.apiKey.tenantIds, jobTypes: visibleJobTypes(ctx.apiKey) });
      if (!job) throw new AppError("NOT_FOUND", { message: `job ${input.job_id} not found` });
      return job;
    }),

  /**
   * Cancels a job of the key's tenants and job types: queued → CANCELLED at once; running →
   * RUNNING (requested). Anything else is a 404 and stays as it is.
   */
  cancel: producerProcedure
    .input(parsedSync(ZCancelJobRequest))
    .output(parsedSync(ZCancelJobResult))
    .mutation(({ ctx, input }) =>
      cancelJob(ctx.db, {
        jobId: input.job_id,
        tenantIds: ctx.apiKey.tenantIds,
        jobTypes: visibleJobTypes(ctx.apiKey),
        reason: input.reason,
        actor: `key:${ctx.apiKey.id}`,
      }),
    ),
});
