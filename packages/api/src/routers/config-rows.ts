// Output schemas of the control-plane procedures: rows as @porter/core returns them.
import { z } from "zod";

const stamps = { created_at: z.string(), updated_at: z.string() };
const nullableInt = z.number().int().nullable();

export const ZPoolRow = z.object({
  id: z.string(),
  description: z.string(),
  concurrency_cap: nullableInt,
  worker_concurrency: z.number().int(),
  ...stamps,
});
export const ZResourceKeyRow = z.object({
  id: z.string(),
  description: z.string(),
  concurrency_limit: nullableInt,
  rate_per_second: z.number().nullable(),
  burst: nullableInt,
  current_limit: nullableInt,
  throttled_until: z.string().nullable(),
  ...stamps,
});
export const ZQueueRow = z.object({
  id: z.string(),
  pool_id: z.string(),
  description: z.string(),
  default_priority: z.number().int(),
  max_priority: z.number().int(),
  concurrency_cap: nullableInt,
  lease_seconds: z.number().int(),
  default_max_attempts: z.number().int(),
  max_attempts: z.number().int(),
  backoff_base_ms: z.number().int(),
  backoff_cap_ms: z.number().int(),
  default_timeout_s: z.number().int(),
  max_timeout_s: z.number().int(),
  default_deadline_s: nullableInt,
  max_runtime_s: z.number().int(),
  retention_s: z.number().int(),
  aging_s: nullableInt,
  admission: z.enum(["reject", "defer"]),
  resource_key_id: z.string().nullable(),
  paused: z.boolean(),
  ...stamps,
});
export const ZJobTypeRow = z.object({
  id: z.string(),
  queue_id: z.string(),
  description: z.string(),
  payload_schema_version: z.string(),
  timeout_s: nullableInt,
  ...stamps,
});
export const ZTenantRow = z.object({
  id: z.string(),
  name: z.string(),
  weight: z.number().int(),
  max_running: nullableInt,
  start_rate_per_second: z.number().nullable(),
  rate_per_second: z.number().nullable(),
  backlog_cap: nullableInt,
  max_priority: nullableInt,
  max_attempts: nullableInt,
  status_origins: z.array(z.string()),
  ...stamps,
});
