import { type ActiveUser, getActiveUser } from "@porter/core";
import type { ControlDb } from "@porter/db/prisma";
import { decode } from "next-auth/jwt";
import type { Session } from "./context";

/** next-auth's session cookie: `__Secure-` prefixed when the console is served over https. */
export const sessionCookieName = (isSecure: boolean): string => (isSecure ? "__Secure-next-auth.session-token" : "next-auth.session-token");

/**
 * The session token in a Cookie header: the cookie itself, or its chunks `<name>.0`, `<name>.1`, …
 * joined in order (next-auth splits tokens over 4 KB). Null when absent.
 */
export const sessionTokenFromCookies = (cookieHeader: string | null, name: string): string | null => {
  if (!cookieHeader) return null;
  const cookies = new Map<string, string>();
  for (const part of cookieHeader.split(";")) {
    const eq = part.indexOf("=");
    if (eq <= 0) continue;
    const key = part.slice(0, eq).trim();
    const value = part.slice(eq + 1).trim();
    try {
      cookies.set(key, decodeURIComponent(value));
    } catch {
      cookies.set(key, value);
    }
  }
  const whole = cookies.get(name);
  if (whole) return whole;
  const chunks: string[] = [];
  for (let i = 0; cookies.has(`${name}.${i}`); i++) chunks.push(cookies.get(`${name}.${i}`)!);
  return chunks.length ? chunks.join("") : null;
};

/** The JWT claim carrying the `users.session_version` a session was issued under. */
export const SESSION_VERSION_CLAIM = "sv";

/** How long a process may reuse a user's row (role, enabled flag, session version): a few seconds. */
export const DEFAULT_SESSION_CACHE_MS = 3000;

/**
 * A per-process cache of the users sessions name, so a page that fires a dozen tRPC calls reads
 * `users` once: a sign-out, password reset, role change or disable reaches every process within
 * `ttlMs`. The app creates one (packages hold no singletons) and passes it to every reader.
 */
export type SessionUserCache = {
  get: (userId: string, load: () => Promise<ActiveUser | null>) => Promise<ActiveUser | null>;
  /** Reads the user again now (replacing the cached entry). */
  refresh: (userId: string, load: () => Promise<ActiveUser | null>) => Promise<ActiveUser | null>;
};

/** A {@link SessionUserCache} keeping each entry `ttlMs` (0 = no caching), at most `maxEntries`. */
export const createSessionUserCache = (options: { ttlMs?: number; maxEntries?: number } = {}): SessionUserCache => {
  const ttlMs = options.ttlMs ?? DEFAULT_SESSION_CACHE_MS;
  const maxEntries = options.maxEntries ?? 10_000;
  const entries = new Map<string, { until: number; user: Promise<ActiveUser | null> }>();
  const refresh: SessionUserCache["refresh"] = (userId, load) => {
    if (entries.size >= maxEntries) entries.clear();
    const user = load();
    entries.set(userId, { until: Date.now() + ttlMs, user });
    // A failed read is not cached: the next request asks the database again.
    user.catch(() => entries.delete(userId));
    return user;
  };
  return {
    get: (userId, load) => {
      const hit = entries.get(userId);
      return hit && hit.until > Date.now() ? hit.user : refresh(userId, load);
    },
    refresh,
  };
};

/**
 * What {@link readSession} needs: the control plane's Prisma client (for the user's current role
 * and session version), the JWT secret, and the process's user cache (none: read `users` on
 * every call).
 */
export type SessionReaderOptions = { prisma: ControlDb; secret: string; isSecureCookie?: boolean; cache?: SessionUserCache };

/**
 * The console session of a request, from next-auth's session cookie only (never an
 * Authorization header: producer keys travel there, and a session must be the browser's cookie
 * for the CSRF rules to mean anything). The JWT names the user and the session version it was
 * issued under; the role, the enabled flag and the current version are read from `users` (through
 * the cache, so within a few seconds). Null when there is no cookie, it does not decrypt, it
 * expired, the user is gone or disabled, or the session was ended (sign-out, password change or
 * reset, role change, disable: each bumps the version).
 */
export const readSession = async (cookieHeader: string | null, options: SessionReaderOptions): Promise<Session | null> => {
  const token = sessionTokenFromCookies(cookieHeader, sessionCookieName(options.isSecureCookie ?? false));
  if (!token) return null;
  let userId: unknown;
  let version: unknown;
  try {
    const payload = await decode({ token, secret: options.secret });
    if (payload && typeof payload.exp === "number" && payload.exp * 1000 < Date.now()) return null;
    userId = payload?.sub;
    version = payload?.[SESSION_VERSION_CLAIM];
  } catch {
    return null;
  }
  // A token without a version predates revocable sessions: it is not accepted.
  if (typeof userId !== "string" || userId.length === 0 || typeof version !== "number") return null;
  const load = () => getActiveUser(options.prisma, userId);
  let user = await (options.cache ? options.cache.get(userId, load) : load());
  // Versions only grow: a token newer than the cached row was issued after it was read (a sign-in
  // right after a sign-out), so the cache is stale, not the token.
  if (options.cache && user && version > user.sessionVersion) user = await options.cache.refresh(userId, load);
  if (!user || user.sessionVersion !== version) return null;
  return { userId: user.id, email: user.email, role: user.role, name: user.name };
};

/** `getSession` for {@link handleTrpcRequest}: reads the request's Cookie header. */
export const createSessionReader =
  (options: SessionReaderOptions) =>
  (req: Request): Promise<Session | null> =>
    readSession(req.headers.get("cookie"), options);
