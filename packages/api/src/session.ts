import { getActiveUser } from "@porter/core";
import { decode } from "next-auth/jwt";
import type pg from "pg";
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

/** What {@link readSession} needs: the database (for the user's current role) and the JWT secret. */
export type SessionReaderOptions = { pool: pg.Pool; secret: string; isSecureCookie?: boolean };

/**
 * The console session of a request, from next-auth's session cookie only (never an
 * Authorization header: producer keys travel there, and a session must be the browser's cookie
 * for the CSRF rules to mean anything). The JWT names the user; the role and the enabled flag
 * are read from `users` on every call, so a demotion or a disabled account takes effect at once.
 * Null when there is no cookie, it does not decrypt, it expired, or the user is gone or disabled.
 */
export const readSession = async (cookieHeader: string | null, options: SessionReaderOptions): Promise<Session | null> => {
  const token = sessionTokenFromCookies(cookieHeader, sessionCookieName(options.isSecureCookie ?? false));
  if (!token) return null;
  let userId: unknown;
  try {
    const payload = await decode({ token, secret: options.secret });
    if (payload && typeof payload.exp === "number" && payload.exp * 1000 < Date.now()) return null;
    userId = payload?.sub;
  } catch {
    return null;
  }
  if (typeof userId !== "string" || userId.length === 0) return null;
  const user = await getActiveUser(options.pool, userId);
  return user ? { userId: user.id, email: user.email, role: user.role, name: user.name } : null;
};

/** `getSession` for {@link handleTrpcRequest}: reads the request's Cookie header. */
export const createSessionReader = (options: SessionReaderOptions) => (req: Request): Promise<Session | null> =>
  readSession(req.headers.get("cookie"), options);
