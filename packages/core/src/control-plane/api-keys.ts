import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { AppError } from "@porter/contracts";
import type { ControlDb } from "@porter/db/prisma";
import { type Db, inTransaction } from "../db";
import { writeAudit, writeAuditTx } from "./audit";

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
  db: Db,
  params: { tenantIds: string[]; jobTypes: string[]; name?: string; actor: string; ratePerSecond?: number | null },
): Promise<{ key: string; id: string; tenants: string[]; job_types: string[] }> => {
  if (params.tenantIds.length === 0) throw new AppError("BAD_REQUEST", { message: "a key needs at least one tenant" });
  if (params.jobTypes.length === 0) throw new AppError("BAD_REQUEST", { message: "a key needs at least one job type (or *)" });
  return inTransaction(db, async (client) => {
    const tenants = await client.query<{ id: string }>(`SELECT id FROM tenants WHERE id = ANY($1::text[])`, [params.tenantIds]);
    const missingTenants = params.tenantIds.filter((t) => !tenants.rows.some((r) => r.id === t));
    if (missingTenants.length) throw new AppError("BAD_REQUEST", { message: `unknown tenant(s): ${missingTenants.join(", ")}` });
    const explicitTypes = params.jobTypes.filter((t) => t !== "*");
    if (explicitTypes.length) {
      const types = await client.query<{ id: string }>(`SELECT id FROM job_types WHERE id = ANY($1::text[])`, [explicitTypes]);
      const missing = explicitTypes.filter((t) => !types.rows.some((r) => r.id === t));
      if (missing.length) throw new AppError("BAD_REQUEST", { message: `unknown job type(s): ${missing.join(", ")}` });
    }
    const id = randomBytes(9)
      .toString("base64url")
      .toLowerCase()
      .replace(/[^a-z0-9]/g, "x")
      .slice(0, 12);
    const secret = randomBytes(32).toString("base64url");
    await client.query(`INSERT INTO api_keys (id, name, secret_hash, tenant_ids, job_types, created_by, rate_per_second) VALUES ($1, $2, $3, $4, $5, $6, $7)`, [
      id,
      params.name ?? "",
      sha256(secret),
      params.tenantIds,
      params.jobTypes,
      params.actor,
      params.ratePerSecond ?? null,
    ]);
    await writeAudit(client, [
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
export const verifyApiKey = async (db: Db, presented: string): Promise<ApiKeyScope | null> => {
  const match = KEY_PATTERN.exec(presented.trim());
  if (!match) return null;
  const [, id, secret] = match as unknown as [string, string, string];
  const { rows } = await db.query<{ id: string; secret_hash: string; tenant_ids: string[]; job_types: string[] }>(
    `SELECT id, secret_hash, tenant_ids, job_types FROM api_keys WHERE id = $1 AND revoked_at IS NULL`,
    [id],
  );
  const row = rows[0];
  if (!row) return null;
  const expected = Buffer.from(row.secret_hash, "hex");
  const actual = Buffer.from(sha256(secret), "hex");
  if (expected.length !== actual.length || !timingSafeEqual(expected, actual)) return null;
  return { id: row.id, tenantIds: row.tenant_ids, jobTypes: row.job_types };
};

/** Revokes a key (audited); later requests with it are 401. */
export const revokeApiKey = async (db: ControlDb, params: { id: string; actor: string; reason?: string }): Promise<void> =>
  db.$transaction(async (tx) => {
    const [{ now }] = await tx.$queryRaw<[{ now: Date }]>`SELECT now()`;
    const { count } = await tx.apiKey.updateMany({ where: { id: params.id, revokedAt: null }, data: { revokedAt: now } });
    if (!count) throw new AppError("NOT_FOUND", { message: `active api key ${params.id} not found` });
    await writeAuditTx(tx, [{ actor: params.actor, action: "api_key.revoke", objectType: "api_key", objectId: params.id, reason: params.reason ?? null }]);
  });
