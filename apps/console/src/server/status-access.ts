import { type StatusLinkScope, statusLinkById } from "@porter/core";
import type { ControlDb } from "@porter/db/prisma";
import { verifyStatusCookie } from "./status-link-cookie";

/** Who may see /status/<tenant_id>: a link of that tenant (limited to its job types), or an operator. */
export type StatusAccess = { kind: "link"; link: StatusLinkScope; jobTypes: string[] } | { kind: "operator"; jobTypes: [] };

/**
 * Authorises a request for a tenant's status page: the status cookie's link, re-checked now (so a
 * revoked or expired link is refused at once) and of this very tenant, else a console session of
 * an operator or admin. null → the page answers 404 (whether the tenant exists is not revealed).
 */
export const statusPageAccess = async (
  prisma: ControlDb,
  params: { tenantId: string; cookie: string | undefined; secret: string; sessionRole: string | null },
): Promise<StatusAccess | null> => {
  const linkId = verifyStatusCookie(params.secret, params.cookie);
  if (linkId) {
    const link = await statusLinkById(prisma, linkId);
    if (link && link.tenantId === params.tenantId) return { kind: "link", link, jobTypes: link.jobTypes };
  }
  if (params.sessionRole === "operator" || params.sessionRole === "admin") return { kind: "operator", jobTypes: [] };
  return null;
};
