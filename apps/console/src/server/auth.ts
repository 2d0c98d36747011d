import { clientAddressOf, createSessionUserCache, readSession, SESSION_VERSION_CLAIM, type Session, type SessionUserCache } from "@porter/api";
import { authenticateUser, clearSignInFailures, endUserSessions, recordSignInFailure, signInRetryAfter, writeAudit } from "@porter/core";
import { cookies } from "next/headers";
import type { NextAuthOptions } from "next-auth";
import CredentialsProvider from "next-auth/providers/credentials";
import { z } from "zod";
import { safeCallbackUrl } from "../lib/safe-callback";
import { getPool, getPrisma } from "./db";
import { getEnv } from "./env";
import { getLogger } from "./logger";

const ZCredentials = z.object({ email: z.string().trim().min(1).max(200), password: z.string().min(1).max(200) });

/** Console sessions last a working day; role and session version are re-checked per request. */
const SESSION_MAX_AGE_S = 12 * 60 * 60;

/** Whether session cookies are `Secure` (`__Secure-` prefixed): when the console is served over https. */
export const isSecureCookie = (): boolean => getEnv().NEXTAUTH_URL?.startsWith("https://") ?? false;

/** The console's own origin: NEXTAUTH_URL's, else the local address `npm start` prints. */
export const consoleOrigin = (): string => {
  const env = getEnv();
  return env.NEXTAUTH_URL ? new URL(env.NEXTAUTH_URL).origin : `http://localhost:${env.PORT}`;
};

// Process-wide (on globalThis so `next dev` reloads keep it): users read by sessions, for a few seconds.
const state = globalThis as typeof globalThis & { porterSessionUsers?: SessionUserCache };
/** The console process's cache of session users (see @porter/api session.ts). */
export const getSessionUserCache = (): SessionUserCache => (state.porterSessionUsers ??= createSessionUserCache());

/** The client address of a next-auth request (its headers as a plain object). */
const addressOfHeaders = (headers: Record<string, unknown> | undefined): string | null => {
  const forwarded = headers?.["x-forwarded-for"];
  return typeof forwarded === "string" ? clientAddressOf(new Request("http://x", { headers: { "x-forwarded-for": forwarded } })) : null;
};

/**
 * A failed sign-in: charged to the account's and the address's buckets; the failure that starts a
 * throttle is audited (once, not every refused attempt of a flood).
 */
const signInFailed = async (email: string, address: string | null, why: string): Promise<void> => {
  getLogger().info("console sign-in refused", { email, why });
  const { isNowThrottled } = await recordSignInFailure(getPool(), { email, address });
  if (isNowThrottled) {
    getLogger().warn("console sign-in throttled", { email, address });
    await writeAudit(getPool(), [
      { actor: `address:${address ?? "unknown"}`, action: "auth.signin_throttled", objectType: "user", objectId: email, after: { address } },
    ]);
  }
};

/**
 * next-auth: email + password (argon2id hashes in `users`), JWT sessions in an encrypted cookie.
 * The token names the user and the `session_version` it was issued under; role, enabled flag and
 * version are checked per request (see @porter/api session.ts), so a sign-out, password change,
 * role change or disable ends every session of the user. Failed sign-ins are throttled per
 * account and per client address (sign-in route: 429 + Retry-After).
 */
export const getAuthOptions = (): NextAuthOptions => ({
  secret: getEnv().AUTH_SECRET,
  session: { strategy: "jwt", maxAge: SESSION_MAX_AGE_S },
  jwt: { maxAge: SESSION_MAX_AGE_S },
  useSecureCookies: isSecureCookie(),
  pages: { signIn: "/signin", error: "/signin" },
  providers: [
    CredentialsProvider({
      name: "Email and password",
      credentials: { email: { label: "Email", type: "email" }, password: { label: "Password", type: "password" } },
      async authorize(credentials, req) {
        const parsed = ZCredentials.safeParse(credentials);
        if (!parsed.success) return null;
        const email = parsed.data.email.toLowerCase();
        const address = addressOfHeaders(req?.headers);
        // The sign-in route answered 429 already; this covers concurrent attempts that passed it.
        if ((await signInRetryAfter(getPool(), { email, address })) !== null) return null;
        const user = await authenticateUser(getPrisma(), email, parsed.data.password);
        if (!user) {
          await signInFailed(email, address, "wrong email or password, or disabled");
          return null;
        }
        await clearSignInFailures(getPool(), { email });
        getLogger().info("console sign-in", { email: user.email, role: user.role });
        return { id: user.id, email: user.email, name: user.name, sessionVersion: user.sessionVersion };
      },
    }),
  ],
  callbacks: {
    jwt: ({ token, user }) => (user ? { ...token, sub: user.id, [SESSION_VERSION_CLAIM]: (user as { sessionVersion?: number }).sessionVersion } : token),
    // Wherever next-auth would send the browser (sign-in, sign-out): a path of ours, or `/`.
    redirect: ({ url, baseUrl }) => safeCallbackUrl(url.startsWith(baseUrl) ? url.slice(baseUrl.length) || "/" : url, baseUrl),
  },
  events: {
    // Signing out ends the user's sessions everywhere, so a copied cookie stops working too.
    signOut: async ({ token }) => {
      if (typeof token?.sub === "string") await endUserSessions(getPrisma(), token.sub);
    },
  },
  logger: {
    error: (code, metadata) => getLogger().error("next-auth error", { code, metadata }),
    warn: (code) => getLogger().warn("next-auth warning", { code }),
    debug: () => undefined,
  },
});

/** The signed-in user of the current request (server components), or null. */
export const getConsoleSession = async (): Promise<Session | null> => {
  const store = await cookies();
  const header = store
    .getAll()
    .map((c) => `${c.name}=${encodeURIComponent(c.value)}`)
    .join("; ");
  return readSession(header, { prisma: getPrisma(), secret: getEnv().AUTH_SECRET, isSecureCookie: isSecureCookie(), cache: getSessionUserCache() });
};
