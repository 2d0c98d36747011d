import { randomUUID } from "node:crypto";
import { hash, verify } from "@node-rs/argon2";
import type { ControlTx } from "@porter/db/prisma";

export type Role = "viewer" | "operator" | "admin";

/** Argon2id (memory-hard) password hashing for console users. */
export const hashPassword = (password: string): Promise<string> => hash(password, { memoryCost: 19_456, timeCost: 2, parallelism: 1 });
export const verifyPassword = (hashed: string, password: string): Promise<boolean> => verify(hashed, password).catch(() => false);

/**
 * Creates or updates a user by email (idempotent for seeding). Updating the password or role of
 * an existing user ends its sessions (bumps `session_version`). One statement (Prisma runs an
 * upsert on a unique field as INSERT … ON CONFLICT), so concurrent seeders cannot both insert.
 */
export const upsertUser = async (db: ControlTx, params: { email: string; name?: string; password: string; role: Role }): Promise<string> => {
  const passwordHash = await hashPassword(params.password);
  // Prisma would stamp created_at from this process's clock; the database's is the one of record.
  const [{ now }] = await db.$queryRaw<[{ now: Date }]>`SELECT now()`;
  const user = await db.user.upsert({
    where: { email: params.email.toLowerCase() },
    create: { id: randomUUID(), email: params.email.toLowerCase(), name: params.name ?? "", passwordHash, role: params.role, createdAt: now },
    update: { passwordHash, role: params.role, sessionVersion: { increment: 1 } },
    select: { id: true },
  });
  return user.id;
};

/**
 * Ends every console session of a user (sign-out): bumps `session_version`, so each cookie issued
 * before — in this browser or any other — is refused on its next request (after the few seconds
 * a process may cache the version). A user that does not exist is a no-op.
 */
export const endUserSessions = async (db: ControlTx, userId: string): Promise<void> => {
  await db.user.updateMany({ where: { id: userId }, data: { sessionVersion: { increment: 1 } } });
};
