import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { AppError } from "@porter/contracts";
import type { ControlDb, ControlTx } from "@porter/db/prisma";
import { writeAuditTx } from "./audit";

/** A producer's credential as the API sees it once verified. */
export type ApiKeyScope = { id: string; tenantIds: string[]; jobTypes: string[] };

const sha256 = (s: string) => createHash("sha256").update(s).digest("hex");
const KEY_PATTERN = /^pk_([a-z0-9]{12})_([A-Za-z0-9_-]{32,})$/;

/**
 * Creates an API key scoped to tenants and job types (["*"] = every type). Returns the full key
 * once; only a SHA-256 of its secret is stored. `ratePerSecond` caps its calls (null: the API's
 * default; see sql/authenticate-key.ts) (the secret is 256 random bits, so a fast hash is
 * enough). Unknown tenants or job types are a 400. Audited.
 */
export const createApiKey = async (
  db: ControlTx,
  params: { tenantIds: string[]; jobTypes: string[]; name?: string; actor: string; ratePerSecond?: number | null },
): Promise<{ key: string; id: string; tenants: string[]; job_types: string[] }> => {
  if (params.tenantIds.length === 0) throw new AppError("BAD_REQUEST", { message: "a key needs at least one tenant" });
  if (params.jobTypes.length === 0) throw new AppError("BAD_REQUEST", { message: "a key needs at least one job type (or *)" });
  return db.$transaction(async (tx) => {
    const tenants = await tx.tenant.findMany({ where: { id: { in: params.tenantIds } }, select: { id: true } });
    const missingTenants = params.tenantIds.filter((t) => !tenants.some((r) => r.id === t));
    if (missingTenants.length) throw new AppError("BAD_REQUEST", { message: `unknown tenant(s): ${missingTenants.join(", ")}` });
    const explicitTypes = params.jobTypes.filter((t) => t !== "*");
    if (explicitTypes.length) {
      const types = await tx.jobType.findMany({ where: { id: { in: explicitTypes } }, select: { id: true } });
      const missing = explicitTypes.filter((t) => !types.some((r) => r.id === t));
      if (missing.length) throw new AppError("BAD_REQUEST", { message: `unknown job type(s): ${missing.join(", ")}` });
    }
    const id = randomBytes(9)
      .toString("base64url")
      .toLowerCase()
      .replace(/[^a-z0-9]/g, "x")
      .slice(0, 12);
    const secret = randomBytes(32).toString("base64url");
    // Prisma would stamp created_at from this process's clock; the database's is the one of record.
    const [{ now }] = await tx.$queryRaw<[{ now: Date }]>`SELECT now()`;
    await tx.apiKey.create({
      data: {
        id,
        createdAt: now,
        name: params.name ?? "",
        secretHash: sha256(secret),
        tenantIds: params.tenantIds,
        jobTypes: params.jobTypes,
        createdBy: params.actor,
        ratePerSecond: params.ratePerSecond ?? null,
      },
      select: { id: true },
    });
    await writeAuditTx(tx, [
      {
        actor: params.actor,
        action: "api_key.create",
        objectType: "api_key",
        objectId: id,
        after: { tenant_ids: params.tenantIds, job_types: params.jobTypes, name: params.name ?? "" },
      },
    ]);
    return { key: `pk_${id}_${secret}`, id, tenants: params.tenantIds, job_types: params.jobTypes };
  });
};

/**
 * Verifies a presented key without side effects (CLI, tests); null when malformed, unknown,
 * revoked or wrong. Constant-time compare. The producer API uses `authenticateApiKey`, which also
 * throttles failures and rate-limits the key.
 */
export const verifyApiKey = async (db: ControlTx, presented: string): Promise<ApiKeyScope | null> => {
  const match = KEY_PATTERN.exec(presented.trim());
  if (!match) return null;
  const [, id, secret] = match as unknown as [string, string, string];
  const row = await db.apiKey.findFirst({ where: { id, revokedAt: null }, select: { id: true, secretHash: true, tenantIds: true, jobTypes: true } });
  if (!row) return null;
  const expected = Buffer.from(row.secretHash, "hex");
  const actual = Buffer.from(sha256(secret), "hex");
  if (expected.length !== actual.length || !timingSafeEqual(expected, actual)) return null;
  return { id: row.id, tenantIds: row.tenantIds, jobTypes: row.jobTypes };
};

/** Revokes a key (audited); later requests with it are 401. */
export const revokeApiKey = async (db: ControlDb, params: { id: string; actor: string; reason?: string }): Promise<void> =>
  db.$transaction(async (tx) => {
    const [{ now }] = await tx.$queryRaw<[{ now: Date }]>`SELECT now()`;
    const { count } = await tx.apiKey.updateMany({ where: { id: params.id, revokedAt: null }, data: { revokedAt: now } });
    if (!count) throw new AppError("NOT_FOUND", { message: `active api key ${params.id} not found` });
    await writeAuditTx(tx, [{ actor: params.actor, action: "api_key.revoke", objectType: "api_key", objectId: params.id, reason: params.reason ?? null }]);
  });
