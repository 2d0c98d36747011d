import { createHash, randomBytes } from "node:crypto";
import { AppError } from "@porter/contracts";
import type { ControlDb } from "@porter/db/prisma";
import { writeAuditTx } from "./audit";

// Tenant status links (issue 13, deliverable 2). An operator issues a link for one tenant, optionally
// limited to job types; the token (32 random bytes) is returned once and only its SHA-256 is stored,
// under a unique index, so resolving is a single index lookup on the hash (a timing difference
// could only reveal a hash prefix, never the token). Expired and revoked links resolve to null.

const sha256 = (s: string) => createHash("sha256").update(s).digest("hex");
const TOKEN_PATTERN = /^[A-Za-z0-9_-]{43}$/;
/** Longest lifetime of a link: 90 days. */
export const STATUS_LINK_MAX_SECONDS = 90 * 24 * 3600;
export const STATUS_LINK_DEFAULT_SECONDS = 7 * 24 * 3600;

export type StatusLinkRow = {
  id: string;
  tenant_id: string;
  job_types: string[];
  expires_at: string;
  revoked_at: string | null;
  created_by: string;
  created_at: string;
  last_used_at: string | null;
  /** "active" | "expired" | "revoked", as of the database's clock at the read. */
  state: "active" | "expired" | "revoked";
};

/** The resolved scope of a presented token. */
export type StatusLinkScope = { id: string; tenantId: string; jobTypes: string[]; expiresAt: Date };

/** "7d", "12h", "30m", "3600s" or a bare number of seconds → seconds; null when malformed. */
export const parseLinkDuration = (text: string): number | null => {
  const m = /^(\d{1,7})([smhd]?)$/.exec(text.trim());
  if (!m) return null;
  const n = Number(m[1]);
  const unit = { "": 1, s: 1, m: 60, h: 3600, d: 86400 }[m[2] as "" | "s" | "m" | "h" | "d"];
  return n * unit;
};

/**
 * Issues a status link for a tenant. `expiresInSeconds` between 60 s and 90 days (default 7 days);
 * `jobTypes` must be known job types ([] = all). Unknown tenant or type: 400. Audited (without
 * the token). Returns the token once.
 */
export const createStatusLink = async (
  db: ControlDb,
  params: { tenantId: string; jobTypes?: string[]; expiresInSeconds?: number; actor: string },
): Promise<{ id: string; token: string; tenant_id: string; job_types: string[]; expires_at: string }> => {
  const seconds = params.expiresInSeconds ?? STATUS_LINK_DEFAULT_SECONDS;
  if (!Number.isInteger(seconds) || seconds < 60 || seconds > STATUS_LINK_MAX_SECONDS) {
    throw new AppError("BAD_REQUEST", { message: `a link expires in 60 s to 90 days (got ${seconds} s)` });
  }
  const jobTypes = [...new Set(params.jobTypes ?? [])];
  if (jobTypes.some((t) => t === "*" || t.trim() === "")) throw new AppError("BAD_REQUEST", { message: "job types are explicit names ([] = all)" });
  return db.$transaction(async (tx) => {
    const tenant = await tx.tenant.findUnique({ where: { id: params.tenantId }, select: { id: true } });
    if (!tenant) throw new AppError("BAD_REQUEST", { message: `unknown tenant: ${params.tenantId}` });
    if (jobTypes.length) {
      const known = await tx.jobType.findMany({ where: { id: { in: jobTypes } }, select: { id: true } });
      const missing = jobTypes.filter((t) => !known.some((r) => r.id === t));
      if (missing.length) throw new AppError("BAD_REQUEST", { message: `unknown job type(s): ${missing.join(", ")}` });
    }
    const id = `sl_${randomBytes(9).toString("hex")}`;
    const token = randomBytes(32).toString("base64url");
    // The database's clock is the one of record (expiry is checked against it too).
    const [{ now }] = await tx.$queryRaw<[{ now: Date }]>`SELECT now()`;
    const expiresAt = new Date(now.getTime() + seconds * 1000);
    await tx.tenantStatusLink.create({
      data: { id, tenantId: params.tenantId, tokenHash: sha256(token), jobTypes, expiresAt, createdBy: params.actor, createdAt: now },
      select: { id: true },
    });
    await writeAuditTx(tx, [
      {
        actor: params.actor,
        action: "status_link.create",
        objectType: "tenant_status_link",
        objectId: id,
        after: { tenant_id: params.tenantId, job_types: jobTypes, expires_at: expiresAt.toISOString() },
      },
    ]);
    return { id, token, tenant_id: params.tenantId, job_types: jobTypes, expires_at: expiresAt.toISOString() };
  });
};

/** A tenant's links, newest first, without tokens (none is stored). Unknown tenant: 404. */
export const listStatusLinks = async (db: ControlDb, tenantId: string): Promise<StatusLinkRow[]> => {
  const tenant = await db.tenant.findUnique({ where: { id: tenantId }, select: { id: true } });
  if (!tenant) throw new AppError("NOT_FOUND", { message: `tenant ${tenantId} not found` });
  const [{ now }] = await db.$queryRaw<[{ now: Date }]>`SELECT now()`;
  const rows = await db.tenantStatusLink.findMany({ where: { tenantId }, orderBy: [{ createdAt: "desc" }, { id: "asc" }], take: 500 });
  return rows.map((r) => ({
    id: r.id,
    tenant_id: r.tenantId,
    job_types: r.jobTypes,
    expires_at: r.expiresAt.toISOString(),
    revoked_at: r.revokedAt?.toISOString() ?? null,
    created_by: r.createdBy,
    created_at: r.createdAt.toISOString(),
    last_used_at: r.lastUsedAt?.toISOString() ?? null,
    state: r.revokedAt ? "revoked" : r.expiresAt <= now ? "expired" : "active",
  }));
};

/** Revokes a link (audited); the next request with its token or cookie is refused. 404 if unknown or already revoked. */
export const revokeStatusLink = async (db: ControlDb, params: { id: string; actor: string; reason?: string }): Promise<void> =>
  db.$transaction(async (tx) => {
    const [{ now }] = await tx.$queryRaw<[{ now: Date }]>`SELECT now()`;
    const { count } = await tx.tenantStatusLink.updateMany({ where: { id: params.id, revokedAt: null }, data: { revokedAt: now } });
    if (!count) throw new AppError("NOT_FOUND", { message: `active status link ${params.id} not found` });
    await writeAuditTx(tx, [
      { actor: params.actor, action: "status_link.revoke", objectType: "tenant_status_link", objectId: params.id, reason: params.reason ?? null },
    ]);
  });

/**
 * Resolves a presented token to its link's scope, or null (malformed, unknown, expired, revoked).
 * Touches last_used_at at most once a minute (one conditional UPDATE, no read-modify-write).
 */
export const resolveStatusLink = async (db: ControlDb, token: string): Promise<StatusLinkScope | null> => {
  if (!TOKEN_PATTERN.test(token)) return null;
  return activeLink(db, { tokenHash: sha256(token) });
};

/**
 * Re-checks a link by id (the status page's cookie holds the signed link id): the same refusals as
 * {@link resolveStatusLink}, so a revoked or expired link stops working on the next request.
 */
export const statusLinkById = async (db: ControlDb, id: string): Promise<StatusLinkScope | null> => {
  if (!/^sl_[0-9a-f]{18}$/.test(id)) return null;
  return activeLink(db, { id });
};

const activeLink = async (db: ControlDb, where: { tokenHash: string } | { id: string }): Promise<StatusLinkScope | null> => {
  const [{ now }] = await db.$queryRaw<[{ now: Date }]>`SELECT now()`;
  const row = await db.tenantStatusLink.findFirst({
    where: { ...where, revokedAt: null, expiresAt: { gt: now } },
    select: { id: true, tenantId: true, jobTypes: true, expiresAt: true, lastUsedAt: true },
  });
  if (!row) return null;
  if (!row.lastUsedAt || now.getTime() - row.lastUsedAt.getTime() > 60_000) {
    await db.tenantStatusLink.updateMany({
      where: { id: row.id, OR: [{ lastUsedAt: null }, { lastUsedAt: { lt: new Date(now.getTime() - 60_000) } }] },
      data: { lastUsedAt: now },
    });
  }
  return { id: row.id, tenantId: row.tenantId, jobTypes: row.jobTypes, expiresAt: row.expiresAt };
};
