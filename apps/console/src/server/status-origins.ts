import type { ControlDb } from "@porter/db/prisma";

// The origins a tenant allows to embed its status page (tenants.status_origins), for proxy.ts's
// CSP frame-ancestors. proxy.ts sees only the path, so it reads them here: one primary-key lookup,
// cached in-process for a few seconds (STATUS_ORIGINS_TTL_MS) so a page and its chunks, the event
// stream's reconnects and a burst of refreshes cost one query per tenant, not one per request. An
// edit in the console therefore reaches the header within those seconds. The cache holds at most
// MAX_ENTRIES tenants (oldest dropped first); an unknown tenant caches as [] ('none').

export const STATUS_ORIGINS_TTL_MS = 5_000;
const MAX_ENTRIES = 1_000;
const cache = new Map<string, { origins: string[]; until: number }>();

/** The tenant id of a status path (`/status/<tenant_id>[/…]`), or null (the link route, /status). */
export const statusTenantOfPath = (pathname: string): string | null => {
  const m = /^\/status\/([^/]+)(?:\/|$)/.exec(pathname);
  if (!m || m[1] === "link") return null;
  try {
    return decodeURIComponent(m[1]!);
  } catch {
    return null;
  }
};

/** The tenant's status_origins, from the cache when fresh. A database error gives [] (frame refused). */
export const statusOrigins = async (prisma: ControlDb, tenantId: string, now = Date.now()): Promise<string[]> => {
  const hit = cache.get(tenantId);
  if (hit && hit.until > now) return hit.origins;
  const origins = await prisma.tenant
    .findUnique({ where: { id: tenantId }, select: { statusOrigins: true } })
    .then((t) => t?.statusOrigins ?? [])
    .catch(() => null);
  if (origins === null) return [];
  cache.delete(tenantId);
  cache.set(tenantId, { origins, until: now + STATUS_ORIGINS_TTL_MS });
  if (cache.size > MAX_ENTRIES) cache.delete(cache.keys().next().value!);
  return origins;
};
