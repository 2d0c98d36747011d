import type { JobFilter } from "@porter/core";
import type { TJobFilter } from "../../schemas/jobs";

/** The wire filter (snake_case, ISO strings) as @porter/core takes it. */
export const toCoreFilter = (f: TJobFilter): JobFilter => ({
  ...(f.states?.length ? { states: f.states } : {}),
  ...(f.queue_id ? { queueId: f.queue_id } : {}),
  ...(f.job_type ? { jobType: f.job_type } : {}),
  ...(f.tenant_id ? { tenantId: f.tenant_id } : {}),
  ...(f.from ? { from: new Date(f.from) } : {}),
  ...(f.to ? { to: new Date(f.to) } : {}),
  ...(f.idempotency_key ? { idempotencyKey: f.idempotency_key } : {}),
  ...(f.job_id ? { jobId: f.job_id } : {}),
  ...(f.trace_id ? { traceId: f.trace_id } : {}),
  ...(f.error_code ? { errorCode: f.error_code } : {}),
});
