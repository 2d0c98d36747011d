import { PrismaPg } from "@prisma/adapter-pg";
import { PrismaClient } from "./generated/prisma/client";

/** Options of {@link createPrisma}. */
export type CreatePrismaOptions = {
  /** Maximum connections of the adapter's own pg pool. Default 5: Prisma serves the control plane. */
  max?: number;
  /** Shown in `pg_stat_activity.application_name`. */
  applicationName?: string;
};

/**
 * Creates a PrismaClient for `connectionString` through `@prisma/adapter-pg` (Prisma 7 has no
 * built-in driver). The client owns its own small pg pool; the caller must `$disconnect()` it.
 * The hot path (claim, ack) uses plain `pg` via `createPool` instead.
 */
export function createPrisma(connectionString: string, opts: CreatePrismaOptions = {}): PrismaClient {
  const adapter = new PrismaPg({
    connectionString,
    max: opts.max ?? 5,
    application_name: opts.applicationName,
  });
  return new PrismaClient({ adapter });
}
