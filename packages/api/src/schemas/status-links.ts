import { ZConfigId, ZReason } from "@porter/contracts/control-plane";
import { z } from "zod";

// The tenant status links' API contract (issue 13, deliverable 2): tenants.links.{list,create,revoke}.

/** A link as listed: never its token (only a hash is stored). */
export const ZStatusLinkRow = z.object({
  id: z.string(),
  tenant_id: z.string(),
  job_types: z.array(z.string()),
  expires_at: z.string(),
  revoked_at: z.string().nullable(),
  created_by: z.string(),
  created_at: z.string(),
  last_used_at: z.string().nullable(),
  state: z.enum(["active", "expired", "revoked"]),
});

export const ZStatusLinkList = z.strictObject({ tenant_id: ZConfigId });

/** Expiry in seconds, 60 s to 90 days (default 7 days); job types: [] = every type. */
export const ZStatusLinkCreate = z.strictObject({
  tenant_id: ZConfigId,
  expires_in_s: z
    .number({ error: "a whole number of seconds" })
    .int("a whole number of seconds")
    .min(60, "at least 60 seconds")
    .max(90 * 86400, "at most 90 days")
    .optional(),
  job_types: z.array(ZConfigId).max(50, "at most 50 job types").optional(),
});

/** The created link: `token` and `url` are shown once. */
export const ZStatusLinkCreated = z.object({
  id: z.string(),
  tenant_id: z.string(),
  job_types: z.array(z.string()),
  expires_at: z.string(),
  token: z.string(),
  /** Path of the link on the console's origin: `/status/link/<token>`. */
  path: z.string(),
});

/** A status link id as core issues it: `sl_` and 18 hex digits (anything else, NUL included, is a 400). */
export const ZStatusLinkId = z.string().regex(/^sl_[0-9a-f]{18}$/, "a status link id (sl_…)");
export const ZStatusLinkRevoke = z.strictObject({ id: ZStatusLinkId, reason: ZReason });
