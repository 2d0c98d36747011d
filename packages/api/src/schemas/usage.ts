import { ZConfigId } from "@porter/contracts/control-plane";
import { z } from "zod";

/** tenants.usage: a tenant and the window of the rollups (seconds, 1 min … 1 day; default 5 min). */
export const ZTenantUsageInput = z.strictObject({ tenant_id: ZConfigId, window_s: z.number().int().min(60).max(86_400).default(300) });

const ZShare = z.number().min(0).max(1).nullable();

export const ZTenantUsage = z.object({
  tenant_id: z.string(),
  at: z.string(),
  window_s: z.number().int(),
  weight: z.number().int(),
  running: z.number().int(),
  max_running: z.number().int().nullable(),
  throttle_per_s: z.number(),
  throttled_keys: z.array(z.string()),
  pools: z.array(
    z.object({
      pool_id: z.string(),
      running: z.number().int(),
      pool_running: z.number().int(),
      running_share: ZShare,
      starts: z.number().int(),
      pool_starts: z.number().int(),
      start_share: ZShare,
      is_active: z.boolean(),
      active_tenants: z.number().int(),
      active_weight: z.number(),
      weight_share: ZShare,
    }),
  ),
  resource_keys: z.array(
    z.object({
      id: z.string(),
      in_use: z.number().int(),
      tenant_in_use: z.number().int(),
      limit: z.number().int().nullable(),
      rate_per_s: z.number(),
      tenant_rate_per_s: z.number(),
      rate_limit: z.number().nullable(),
      is_throttled: z.boolean(),
      throttled_until: z.string().nullable(),
    }),
  ),
});

/** A worker's id as workers register it (`host:pid:…`): bounded, printable. */
export const ZWorkerId = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[\x21-\x7e]+$/, "a worker id is printable ASCII without spaces");

export const ZWorkerRunningJob = z.object({
  job_id: z.string(),
  job_type: z.string(),
  queue_id: z.string(),
  tenant_id: z.string(),
  attempt: z.number().int(),
  worker_id: z.string(),
  claimed_at: z.string(),
  started_at: z.string().nullable(),
  lease_until: z.string().nullable(),
  claimed_ms_ago: z.number(),
  lease_expires_in_ms: z.number().nullable(),
});

export const ZWorkerAttempt = z.object({
  job_id: z.string(),
  job_type: z.string(),
  queue_id: z.string(),
  tenant_id: z.string(),
  attempt: z.number().int(),
  started_at: z.string(),
  finished_at: z.string(),
  run_ms: z.number(),
  outcome: z.string(),
  error_code: z.string().nullable(),
});

/** pools.workers.running: the running jobs of one pool's workers (or of every pool's). */
export const ZWorkersRunningInput = z.strictObject({ pool_id: ZConfigId.optional() }).default({});
/** pools.workers.get: one worker. */
export const ZWorkerGetInput = z.strictObject({ id: ZWorkerId });
/** pools.workers.attempts: one worker's ended attempts, newest first. */
export const ZWorkerAttemptsInput = z.strictObject({
  id: ZWorkerId,
  cursor: z
    .string()
    .regex(/^\d{1,17}\.[0-9a-f-]{36}$/, "a cursor from the previous page's next_cursor")
    .nullish(),
  limit: z.number().int().min(1).max(200).default(50),
});
