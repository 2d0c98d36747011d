// Inputs of the audit log and overview reads; shared with the console (zod only).
import { ZDateTime, ZStorableText } from "@porter/contracts/storable";
import { z } from "zod";

const text = ZStorableText.trim().min(1).max(200);

/** Largest audit_log id (a PostgreSQL bigint). */
const MAX_BIGINT = 9_223_372_036_854_775_807n;

/**
 * An audit-log cursor: the `next_cursor` of the previous page, which is an audit row's id — a
 * positive bigint, so anything past 2^63 − 1 is refused here rather than overflowing the query.
 */
export const ZAuditCursor = z
  .string()
  .regex(/^[1-9]\d{0,18}$/, "a cursor from a previous page (next_cursor): a positive whole number")
  .refine((value) => BigInt(value) <= MAX_BIGINT, "a cursor from a previous page (next_cursor): at most 9223372036854775807");

/** The audit log's filter; every field narrows. */
export const ZAuditFilter = z.strictObject({
  actor: text.optional(),
  action: text.optional(),
  object_type: text.optional(),
  object_id: text.optional(),
  /** at ≥ from (ISO 8601). */
  from: ZDateTime.optional(),
  /** at < to (ISO 8601). */
  to: ZDateTime.optional(),
});

/** `audit.list`: a page of the audit log, newest first. */
export const ZAuditListInput = z.strictObject({
  filter: ZAuditFilter.default({}),
  cursor: ZAuditCursor.nullish(),
  limit: z.number().int().min(1).max(200).default(50),
  /** Sent by tRPC's infinite queries; pages only go forward (older). */
  direction: z.enum(["forward", "backward"]).optional(),
});

/** `overview.throughput`: completions per minute over the last `minutes`, optionally of one queue. */
export const ZThroughputInput = z
  .strictObject({ minutes: z.number().int().min(1).max(180).default(15), queue_id: ZStorableText.max(100).optional() })
  .default({ minutes: 15 });
