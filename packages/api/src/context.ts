import type { ApiKeyScope, KeyAuthCache, KeyAuthLimits, PolicyCache } from "@porter/core";
import type { ControlDb } from "@porter/db/prisma";
import type pg from "pg";
import { createReads, type Reads, type ReplicaReads } from "./reads";

/** Console roles, weakest first. */
export const ROLES = ["viewer", "operator", "admin"] as const;
export type Role = (typeof ROLES)[number];

/** A signed-in console user (next-auth cookie session, role read from `users`; see session.ts). */
export type Session = { userId: string; email: string; role: Role; name?: string };

/**
 * What procedures read of the HTTP request: its method, URL and headers. A fetch `Request` is one;
 * the node:http producer path (node-http.ts) passes a lighter view of an IncomingMessage.
 */
export type RequestHead = { readonly method: string; readonly url: string; readonly headers: { get(name: string): string | null } };

/** What every procedure sees. Procedure builders narrow it (`apiKey`, `session` non-null). */
export type Context = {
  req: RequestHead;
  /** Headers added to the HTTP response (e.g. Set-Cookie, Cache-Control). */
  resHeaders: Headers;
  /** The data plane\'s pg pool (enqueue, job reads and actions), as the runtime role. */
  db: pg.Pool;
  /** The control plane's Prisma client (pools, queues, job types, tenants, resource keys, keys, users, audit reads). */
  prisma: ControlDb;
  /** Job-type/tenant policy cache shared by the process (enqueue). */
  policyCache: PolicyCache;
  /**
   * Where the console's heavy reads run (reads.ts): `viewerReadProcedure` swaps `db`/`prisma` for
   * its target (the read replica when it may serve them). Absent: the primary, always.
   */
  reads?: Reads;
  /** Ceiling of one job's serialized payload (413 above it). */
  maxPayloadBytes: number;
  /** The verified producer key; set by `producerProcedure`. */
  apiKey: ApiKeyScope | null;
  /** The console user; null without a valid session cookie (viewer/operator/admin procedures deny). */
  session: Session | null;
  /**
   * Origins besides the request's own host that console mutations may come from (the console's
   * public URL behind a proxy); see csrf.ts.
   */
  trustedOrigins?: readonly string[];
  /** The client's address (failed key authentications are throttled per address); null if unknown. */
  clientAddress?: string | null;
  /** Per-key call rate and failure throttling of producer keys (defaults: core's DEFAULT_KEY_AUTH_LIMITS). */
  keyAuthLimits?: Partial<KeyAuthLimits>;
  /** The process's verified-key cache (core's KeyAuthCache); absent = the database is asked on every call. */
  keyAuthCache?: KeyAuthCache;
};

/** Inputs of {@link createContext}; `getSession` reads the console session (session.ts). */
export type CreateContextOptions = {
  req: Request;
  resHeaders: Headers;
  /** The data plane\'s pg pool (enqueue, job reads and actions), as the runtime role. */
  db: pg.Pool;
  prisma: ControlDb;
  policyCache: PolicyCache;
  /** The process's read replica (`PORTER_READ_DATABASE_URL`); absent: every read on the primary. */
  replica?: ReplicaReads;
  maxPayloadBytes: number;
  getSession?: (req: Request) => Promise<Session | null>;
  trustedOrigins?: readonly string[];
  /** The client address of a request; default {@link clientAddressOf}. */
  getClientAddress?: (req: RequestHead) => string | null;
  keyAuthLimits?: Partial<KeyAuthLimits>;
  keyAuthCache?: KeyAuthCache;
};

/**
 * The client address the nearest proxy reports: the last `X-Forwarded-For` entry (Next's server
 * fills it with the socket's address when the request did not bring one; a reverse proxy that
 * appends to it, as nginx's `$proxy_add_x_forwarded_for` does, puts the real client there).
 * Null without the header.
 */
export const clientAddressOf = (req: RequestHead): string | null => {
  const forwarded = req.headers.get("x-forwarded-for");
  const last = forwarded
    ?.split(",")
    .map((s) => s.trim())
    .filter(Boolean)
    .pop();
  return last ? last.slice(0, 100) : null;
};

/**
 * Builds the per-request context. Nothing is verified here: credentials are checked by the
 * procedure builders that need them, so a public procedure costs no database round trip.
 */
export const createContext = async (opts: CreateContextOptions): Promise<Context> => ({
  req: opts.req,
  resHeaders: opts.resHeaders,
  db: opts.db,
  prisma: opts.prisma,
  policyCache: opts.policyCache,
  reads: createReads({ req: opts.req, resHeaders: opts.resHeaders, db: opts.db, prisma: opts.prisma, replica: opts.replica }),
  maxPayloadBytes: opts.maxPayloadBytes,
  apiKey: null,
  session: opts.getSession ? await opts.getSession(opts.req) : null,
  trustedOrigins: opts.trustedOrigins ?? [],
  clientAddress: (opts.getClientAddress ?? clientAddressOf)(opts.req),
  keyAuthLimits: opts.keyAuthLimits ?? {},
  keyAuthCache: opts.keyAuthCache,
});
