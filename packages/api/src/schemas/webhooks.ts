import { WEBHOOK_EVENTS } from "@porter/contracts";
import { ZConfigId } from "@porter/contracts/control-plane";
import { ZStorableText } from "@porter/contracts/storable";
import { z } from "zod";

// The tenant webhooks' API contract (issue 13, deliverable 5): webhooks.{list, create, update,
// rotateSecret, delete, deliveries} and webhooks.allowlist.{list, add, remove}.

const ZEndpointId = z.string().regex(/^we_[0-9a-f]{18}$/, "a webhook endpoint id (we_…)");
const ZUrl = ZStorableText.trim()
  .max(2000, "at most 2000 characters")
  .refine((u) => URL.canParse(u), "a URL")
  .refine((u) => u.startsWith("https://"), "an https:// URL");
const ZEvents = z.array(z.enum(WEBHOOK_EVENTS)).min(1, "at least one event").max(WEBHOOK_EVENTS.length);
const ZDescription = ZStorableText.trim().max(200, "at most 200 characters");

/** An endpoint as listed: never a secret. */
export const ZWebhookRow = z.object({
  id: z.string(),
  tenant_id: z.string(),
  url: z.string(),
  events: z.array(z.enum(WEBHOOK_EVENTS)),
  description: z.string().nullable(),
  enabled: z.boolean(),
  secret_hint: z.string(),
  previous_secret_expires_at: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
});

export const ZWebhookList = z.strictObject({ tenant_id: ZConfigId });

export const ZWebhookCreate = z.strictObject({ tenant_id: ZConfigId, url: ZUrl, events: ZEvents, description: ZDescription.optional() });
/** The created endpoint with its secret (shown once). */
export const ZWebhookCreated = ZWebhookRow.extend({ secret: z.string() });

export const ZWebhookUpdate = z.strictObject({
  id: ZEndpointId,
  url: ZUrl.optional(),
  events: ZEvents.optional(),
  description: ZDescription.nullable().optional(),
  enabled: z.boolean().optional(),
});

/** Overlap in seconds: 0 (the old secret stops at once) to 7 days; default 24 h. */
export const ZWebhookRotate = z.strictObject({
  id: ZEndpointId,
  overlap_seconds: z
    .number({ error: "a whole number of seconds" })
    .int("a whole number of seconds")
    .min(0)
    .max(7 * 86400, "at most 7 days")
    .optional(),
});
export const ZWebhookRotated = z.object({ id: z.string(), secret: z.string(), previous_secret_expires_at: z.string().nullable() });

export const ZWebhookDelete = z.strictObject({ id: ZEndpointId });

export const ZWebhookDeliveries = z.strictObject({
  id: ZEndpointId,
  cursor: z
    .string()
    .regex(/^\d{1,19}$/, "a cursor from a previous page")
    .nullish(),
  limit: z.number().int().min(1).max(200).optional(),
});
export const ZWebhookDeliveryRow = z.object({
  id: z.string(),
  endpoint_id: z.string(),
  job_id: z.string(),
  event_id: z.string(),
  event_type: z.string(),
  subject_job_id: z.string().nullable(),
  attempt: z.number(),
  status_code: z.number().nullable(),
  error: z.string().nullable(),
  duration_ms: z.number(),
  at: z.string(),
});
export const ZWebhookDeliveryPage = z.object({ items: z.array(ZWebhookDeliveryRow), next_cursor: z.string().nullable() });

const ZCidr = ZStorableText.trim()
  .min(2)
  .max(60)
  .regex(/^[0-9A-Fa-f:.]+(\/\d{1,3})?$/, "a network in CIDR notation, e.g. 10.1.0.0/16 or ::1/128");
export const ZAllowedNetwork = z.object({ cidr: z.string(), note: z.string(), created_by: z.string(), created_at: z.string() });
export const ZAllowlistAdd = z.strictObject({ cidr: ZCidr, note: ZDescription.optional() });
export const ZAllowlistRemove = z.strictObject({ cidr: ZCidr });
