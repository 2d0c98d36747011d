import type { ControlDb } from "@porter/db/prisma";
import { isLsn, type ReadReplica } from "@porter/db/read-replica";
import type pg from "pg";

// The one place that decides where the console's heavy reads run (docs/scaling.md "Replica
// reads"). Procedures built from `viewerReadProcedure` (trpc.ts) get `ctx.db`/`ctx.prisma` of the
// target this handle picks; every other procedure — mutations, the producer API, the data plane —
// keeps the primary's. A console mutation remembers the primary's WAL position after it in a
// cookie, so the session's next reads wait for the replica to replay it (read-your-writes).

/** The cookie holding the primary's WAL position after this browser's last console write. */
export const READ_LSN_COOKIE = "porter_read_lsn";

/** The process's replica, for {@link createReads}: its router and a Prisma client on its pool. */
export type ReplicaReads = {
  router: ReadReplica;
  /** The control plane's Prisma client on the replica's pool. */
  prisma: ControlDb;
  /** Mark the cookie Secure (the console is served over https). */
  isSecureCookie?: boolean;
};

/** Where one read runs. */
export type ReadTarget = { db: pg.Pool; prisma: ControlDb; isReplica: boolean };

/** The per-request handle in the tRPC context (`ctx.reads`). */
export type Reads = {
  /** The replica when it may serve this request's reads (up, within the lag bound, past the session's last write); else the primary. */
  target: () => Promise<ReadTarget>;
  /** The primary, for a read the replica could not serve (failed, or did not find its row). */
  primary: () => ReadTarget;
  /** A read on the replica failed (it runs again on the primary): an unreachable replica serves nothing until its next probe. */
  replicaFailed: (error: unknown) => void;
  /** After a console write: remember the primary's WAL position (a cookie, and for the rest of this request). */
  noteWrite: () => Promise<void>;
};

/** The value of cookie `name` in a Cookie header, if any. */
export const cookieOf = (header: string | null, name: string): string | undefined => {
  for (const part of header?.split(";") ?? []) {
    const eq = part.indexOf("=");
    if (eq > 0 && part.slice(0, eq).trim() === name) return decodeURIComponent(part.slice(eq + 1).trim());
  }
  return undefined;
};

/** The LSN a request's cookie asks its reads to have seen (null when absent or malformed). */
export const readLsnOf = (cookieHeader: string | null): string | null => {
  const value = cookieOf(cookieHeader, READ_LSN_COOKIE);
  return value && isLsn(value) ? value : null;
};

/**
 * The reads handle of one request. Without a replica every target is the primary and a write
 * notes nothing. The cookie lives a little longer than the lag bound: once it expires, a replica
 * within the bound has replayed the write anyway.
 */
export const createReads = (opts: { req: Request; resHeaders: Headers; db: pg.Pool; prisma: ControlDb; replica?: ReplicaReads | undefined }): Reads => {
  const primary: ReadTarget = { db: opts.db, prisma: opts.prisma, isReplica: false };
  const replica = opts.replica;
  if (!replica) {
    return { target: async () => primary, primary: () => primary, replicaFailed: () => {}, noteWrite: async () => {} };
  }
  let minLsn = readLsnOf(opts.req.headers.get("cookie"));
  const onReplica: ReadTarget = { db: replica.router.replica, prisma: replica.prisma, isReplica: true };
  return {
    target: async () => ((await replica.router.choose(minLsn)).isReplica ? onReplica : primary),
    primary: () => primary,
    replicaFailed: (error) => replica.router.readFailed(error),
    noteWrite: async () => {
      try {
        minLsn = await replica.router.writeLsn();
      } catch {
        // The primary just answered the write; if it is gone now, reads fail there anyway.
        return;
      }
      const maxAgeS = Math.max(60, Math.ceil(replica.router.maxLagS * 2));
      opts.resHeaders.append(
        "set-cookie",
        `${READ_LSN_COOKIE}=${encodeURIComponent(minLsn)}; Path=/; Max-Age=${maxAgeS}; HttpOnly; SameSite=Lax${replica.isSecureCookie ? "; Secure" : ""}`,
      );
    },
  };
};
