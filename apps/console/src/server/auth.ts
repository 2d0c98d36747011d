import { readSession, type Session } from "@porter/api";
import { authenticateUser } from "@porter/core";
import type { NextAuthOptions } from "next-auth";
import CredentialsProvider from "next-auth/providers/credentials";
import { cookies } from "next/headers";
import { z } from "zod";
import { getPool } from "./db";
import { getEnv } from "./env";
import { getLogger } from "./logger";

const ZCredentials = z.object({ email: z.string().trim().min(1).max(200), password: z.string().min(1).max(200) });

/** Console sessions last a working day; the role is re-read from the database on every request. */
const SESSION_MAX_AGE_S = 12 * 60 * 60;

/** Whether session cookies are `Secure` (`__Secure-` prefixed): when the console is served over https. */
export const isSecureCookie = (): boolean => getEnv().NEXTAUTH_URL?.startsWith("https://") ?? false;

/**
 * next-auth: email + password (argon2id hashes in `users`), JWT sessions in an encrypted cookie.
 * The token names the user only; role and enabled flag are read per request (see @porter/api
 * session.ts), so changing a role or disabling a user takes effect at once.
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
      async authorize(credentials) {
        const parsed = ZCredentials.safeParse(credentials);
        if (!parsed.success) return null;
        const user = await authenticateUser(getPool(), parsed.data.email, parsed.data.password);
        if (!user) {
          getLogger().info("console sign-in refused", { email: parsed.data.email.toLowerCase() });
          return null;
        }
        getLogger().info("console sign-in", { email: user.email, role: user.role });
        return { id: user.id, email: user.email, name: user.name };
      },
    }),
  ],
  callbacks: {
    jwt: ({ token, user }) => (user ? { ...token, sub: user.id } : token),
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
  return readSession(header, { pool: getPool(), secret: getEnv().AUTH_SECRET, isSecureCookie: isSecureCookie() });
};
