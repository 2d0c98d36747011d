import { randomUUID } from "node:crypto";
import { AppError } from "@porter/contracts";
import type { ControlDb, ControlTx } from "@porter/db/prisma";
import { writeAuditTx } from "./audit";
import { hashPassword, type Role, verifyPassword } from "./users";

/** A console user as the console shows it: never the password hash. */
export type UserRow = { id: string; email: string; name: string; role: Role; created_at: string; disabled_at: string | null };

/** An enabled user as sessions see it: with the `session_version` a session token must carry. */
export type ActiveUser = UserRow & { sessionVersion: number };

type UserModel = { id: string; email: string; name: string; role: Role; createdAt: Date; disabledAt: Date | null };
const USER_SELECT = { id: true, email: true, name: true, role: true, createdAt: true, disabledAt: true } as const;
const fromModel = (u: UserModel): UserRow => ({
  id: u.id,
  email: u.email,
  name: u.name,
  role: u.role,
  created_at: u.createdAt.toISOString(),
  disabled_at: u.disabledAt?.toISOString() ?? null,
});

// The hash of a random, forgotten password (same argon2id parameters as hashPassword): a sign-in
// for an unknown email costs the same time as a known one, so timing does not reveal which exist.
const DUMMY_HASH = "$argon2id$v=19$m=19456,t=2,p=1$jnf1MpvORywKiA/1PTVW9Q$t5dFRbfMvg5Zh8FmY9VOfwwJ8wljus7+TcVUIkJvVHE";

/**
 * Checks an email and password against `users` (argon2id). Returns the user when the password
 * matches and the account is enabled; null otherwise (unknown email, wrong password, disabled),
 * taking about the same time in every case.
 */
export const authenticateUser = async (db: ControlTx, email: string, password: string): Promise<ActiveUser | null> => {
  const row = await db.user.findUnique({
    where: { email: email.trim().toLowerCase() },
    select: { ...USER_SELECT, passwordHash: true, sessionVersion: true },
  });
  if (!row) {
    await verifyPassword(DUMMY_HASH, password);
    return null;
  }
  const isMatch = await verifyPassword(row.passwordHash, password);
  return isMatch && !row.disabledAt ? { ...fromModel(row), sessionVersion: row.sessionVersion } : null;
};

/**
 * An enabled user by id, with its session version (sessions check both per request, through a
 * cache of a few seconds: see @porter/api session.ts), or null.
 */
export const getActiveUser = async (db: ControlTx, id: string): Promise<ActiveUser | null> => {
  const row = await db.user.findFirst({ where: { id, disabledAt: null }, select: { ...USER_SELECT, sessionVersion: true } });
  return row ? { ...fromModel(row), sessionVersion: row.sessionVersion } : null;
};

/** Every console user, by email. */
export const listUsers = async (db: ControlDb): Promise<UserRow[]> =>
  (await db.user.findMany({ select: USER_SELECT, orderBy: { email: "asc" } })).map(fromModel);

/** Creates a console user (argon2id hash), audited without the password. Duplicate email: 409. */
export const createUser = async (db: ControlDb, params: { email: string; name?: string; role: Role; password: string; actor: string }): Promise<UserRow> => {
  const passwordHash = await hashPassword(params.password);
  return db.$transaction(async (tx) => {
    let user: UserRow;
    try {
      const data = { id: randomUUID(), email: params.email.trim().toLowerCase(), name: params.name ?? "", passwordHash, role: params.role };
      user = fromModel(await tx.user.create({ data, select: USER_SELECT }));
    } catch (error) {
      if ((error as { code?: string }).code === "P2002") {
        throw new AppError("CONFLICT", {
          message: `a user with email ${params.email} exists`,
          details: { issues: [{ path: ["email"], message: "already in use" }] },
        });
      }
      throw error;
    }
    await writeAuditTx(tx, [
      { actor: params.actor, action: "user.create", objectType: "user", objectId: user.id, after: { email: user.email, name: user.name, role: user.role } },
    ]);
    return user;
  });
};

/** Changes of {@link updateUser}; absent fields stay as they are. */
export type UserPatch = { name?: string; role?: Role; disabled?: boolean; password?: string };

/**
 * Updates a user's name, role, enabled flag or password, audited (a password change is recorded
 * as `password: "changed"`, never its value or hash), in one transaction. Refused with 409 when
 * it would leave no enabled admin, so the console cannot lock itself out. A new password, another
 * role or disabling the account ends the user's sessions (bumps `session_version`).
 */
export const updateUser = async (db: ControlDb, params: { id: string; patch: UserPatch; actor: string; reason?: string }): Promise<UserRow> => {
  const passwordHash = params.patch.password === undefined ? undefined : await hashPassword(params.patch.password);
  return db.$transaction(async (tx) => {
    // User changes are rare: serialising them makes the last-admin check below race-free (two
    // admins demoting each other at once cannot both see the other still enabled).
    await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtext('porter.users.update'))`;
    await tx.$executeRaw`SELECT 1 FROM users WHERE id = ${params.id} FOR UPDATE`;
    const current = await tx.user.findUnique({ where: { id: params.id }, select: USER_SELECT });
    if (!current) throw new AppError("NOT_FOUND", { message: `user ${params.id} not found` });
    const before = fromModel(current);
    const { name, role, disabled } = params.patch;
    const [{ now }] = await tx.$queryRaw<[{ now: Date }]>`SELECT now()`;
    const disabledAt = disabled === undefined ? current.disabledAt : disabled ? (current.disabledAt ?? now) : null;
    const endsSessions = passwordHash !== undefined || (role !== undefined && role !== current.role) || (disabled === true && current.disabledAt === null);
    const after = fromModel(
      await tx.user.update({
        where: { id: params.id },
        data: {
          ...(name === undefined ? {} : { name }),
          ...(role === undefined ? {} : { role }),
          disabledAt,
          ...(passwordHash === undefined ? {} : { passwordHash }),
          ...(endsSessions ? { sessionVersion: { increment: 1 } } : {}),
        },
        select: USER_SELECT,
      }),
    );
    const wasAdmin = before.role === "admin" && before.disabled_at === null;
    const isAdmin = after.role === "admin" && after.disabled_at === null;
    if (wasAdmin && !isAdmin && (await tx.user.count({ where: { role: "admin", disabledAt: null } })) === 0) {
      throw new AppError("CONFLICT", { message: "refused: this would leave no enabled admin" });
    }
    const beforeAudit: Record<string, unknown> = {};
    const afterAudit: Record<string, unknown> = {};
    for (const key of ["name", "role", "disabled_at"] as const) {
      if (before[key] !== after[key]) {
        beforeAudit[key] = before[key];
        afterAudit[key] = after[key];
      }
    }
    if (passwordHash !== undefined) afterAudit.password = "changed";
    if (Object.keys(afterAudit).length > 0) {
      await writeAuditTx(tx, [
        {
          actor: params.actor,
          action: "user.update",
          objectType: "user",
          objectId: params.id,
          before: beforeAudit,
          after: afterAudit,
          reason: params.reason ?? null,
        },
      ]);
    }
    return after;
  });
};

/** An API key as the console lists it: scope and lifecycle, never the secret or its hash. */
export type ApiKeyRow = {
  id: string;
  name: string;
  tenant_ids: string[];
  job_types: string[];
  created_by: string;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
};

/** Every API key, newest first (revoked ones included, marked). */
export const listApiKeys = async (db: ControlDb): Promise<ApiKeyRow[]> => {
  const rows = await db.apiKey.findMany({ orderBy: [{ createdAt: "desc" }, { id: "asc" }] });
  return rows.map((r) => ({
    id: r.id,
    name: r.name,
    tenant_ids: r.tenantIds,
    job_types: r.jobTypes,
    created_by: r.createdBy,
    created_at: r.createdAt.toISOString(),
    last_used_at: r.lastUsedAt?.toISOString() ?? null,
    revoked_at: r.revokedAt?.toISOString() ?? null,
  }));
};
