import { PrismaPg } from "@prisma/adapter-pg";
import pg from "pg";
import { type Prisma, PrismaClient } from "./generated/prisma/client";

export { Prisma, PrismaClient } from "./generated/prisma/client";

/**
 * The control plane's database handle: the Prisma Client generated from prisma/schema.prisma.
 * Core's control-plane functions (pools, queues, job types, tenants, resource keys, API keys,
 * users, audit reads) take it; the data plane keeps plain `pg`.
 */
export type ControlDb = PrismaClient;

/**
 * A control-plane handle that may be a caller's interactive transaction: a function taking it
 * opens `$transaction` on it, which Prisma 7 nests as a savepoint of the caller's transaction
 * (so a seed can compose several audited writes into one commit). A {@link ControlDb} is one too.
 */
export type ControlTx = Prisma.TransactionClient;

/** Options of {@link createPrisma}. */
export type CreatePrismaOptions = {
  /** Maximum connections of the adapter's own pg pool (ignored when given a pool). Default 5. */
  max?: number;
  /** Shown in `pg_stat_activity.application_name` (ignored when given a pool). */
  applicationName?: string;
};

/**
 * Creates a PrismaClient through `@prisma/adapter-pg` (Prisma 7 has no built-in driver). Given a
 * connection string the client owns a small pg pool of its own; given a `pg.Pool` it shares that
 * pool (and leaves ending it to its owner). Either way the caller must `$disconnect()` it.
 */
export function createPrisma(target: string | pg.Pool, opts: CreatePrismaOptions = {}): PrismaClient {
  const adapter =
    target instanceof pg.Pool ? new PrismaPg(target) : new PrismaPg({ connectionString: target, max: opts.max ?? 5, application_name: opts.applicationName });
  return new PrismaClient({ adapter, transactionOptions: CONTROL_TRANSACTION_OPTIONS });
}

/**
 * Interactive transactions of the control plane: a handful of statements each, so Prisma's 5 s
 * default is never the work itself but a busy host (CI at load 20 saw a two-insert key creation
 * pass 5.2 s and roll back). An operator's write should wait out a slow moment, not fail; the
 * ceiling still ends a transaction that is truly stuck, releasing its row locks.
 */
export const CONTROL_TRANSACTION_OPTIONS = { maxWait: 10_000, timeout: 30_000 } as const;
