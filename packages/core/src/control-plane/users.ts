import { randomUUID } from "node:crypto";
import { hash, verify } from "@node-rs/argon2";
import type { Db } from "../db";

export type Role = "viewer" | "operator" | "admin";

/** Argon2id (memory-hard) password hashing for console users. */
export const hashPassword = (password: string): Promise<string> => hash(password, { memoryCost: 19_456, timeCost: 2, parallelism: 1 });
export const verifyPassword = (hashed: string, password: string): Promise<boolean> => verify(hashed, password).catch(() => false);

/**
 * Creates or updates a user by email (idempotent for seeding). Updating the password or role of
 * an existing user ends its sessions (bumps `session_version`).
 */
export const upsertUser = async (db: Db, params: { email: string; name?: string; password: string; role: Role }): Promise<string> => {
  const passwordHash = await hashPassword(params.password);
  const { rows } = await db.query<{ id: string }>(
    `INSERT INTO users (id, email, name, password_hash, role) VALUES ($1, lower($2), $3, $4, $5)
     ON CONFLICT (email) DO UPDATE SET password_hash = EXCLUDED.password_hash, role = EXCLUDED.role,
       session_version = users.session_version + 1
     RETURNING id`,
    [randomUUID(), params.email, params.name ?? "", passwordHash, params.role],
  );
  return rows[0]!.id;
};

/**
 * Ends every console session of a user (sign-out): bumps `session_version`, so each cookie issued
 * before — in this browser or any other — is refused on its next request (after the few seconds
 * a process may cache the version). A user that does not exist is a no-op.
 */
export const endUserSessions = async (db: Db, userId: string): Promise<void> => {
  await db.query(`UPDATE users SET session_version = session_version + 1 WHERE id = $1`, [userId]);
};
