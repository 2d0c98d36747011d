// Inputs of the jobs browser and its actions; shared with the console (zod only).
import { JOB_STATES } from "@porter/contracts";
import { ZDateTime, ZStorableText } from "@porter/contracts/storable";
import { z } from "zod";

const text = ZStorableText.trim().min(1).max(200);

/** The jobs browser's filter (snake_case on the wire); every field narrows. */
export const ZJobFilter = z.strictObject({
  states: z.array(z.enum(JOB_STATES)).max(JOB_STATES.length).optional(),
  queue_id: text.optional(),
  job_type: text.optional(),
  tenant_id: text.optional(),
  /** created_at ≥ from (ISO 8601). */
  from: ZDateTime.optional(),
  /** created_at < to (ISO 8601). */
  to: ZDateTime.optional(),
  idempotency_key: ZStorableText.min(1).max(500).optional(),
  job_id: z.uuid("a job id (uuid)").optional(),
  trace_id: text.optional(),
  /** The code of the job's error (finished jobs) or last error (live jobs); jobs.errorCodes offers the DEAD ones. */
  error_code: text.optional(),
});
export type TJobFilter = z.infer<typeof ZJobFilter>;

/** A jobs-list cursor: the `next_cursor` of the previous page (a job id's 16 bytes, base64url). */
export const ZJobsCursor = z.string().regex(/^[A-Za-z0-9_-]{22}$/, "a cursor from a previous page (next_cursor)");

/** Most jobs one bulk action touches; "everything matching" beyond it needs another run. */
export const MAX_BULK_JOBS = 10_000;

/** Which jobs a bulk action applies to: the rows ticked in the browser, or everything matching a filter. */
export const ZJobSelection = z.union([
  z.strictObject({ job_ids: z.array(z.uuid()).min(1, "select at least one job").max(1000) }),
  z.strictObject({ filter: ZJobFilter }),
]);
export type TJobSelection = z.infer<typeof ZJobSelection>;

/** A bulk action: dry run first (counts what would change), then the same input with dry_run false. */
export const ZBulkJobAction = z.strictObject({
  selection: ZJobSelection,
  dry_run: z.boolean(),
  reason: ZStorableText.trim().max(500).optional(),
});
export const ZBulkRedrive = ZBulkJobAction.extend({
  /** Also redrive permanent errors, partially completed jobs and jobs past their deadline. */
  force: z.boolean().default(false),
});
