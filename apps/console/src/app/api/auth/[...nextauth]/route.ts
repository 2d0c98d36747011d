import { clientAddressOf } from "@porter/api";
import { signInRetryAfter } from "@porter/core";
import type { NextRequest } from "next/server";
import NextAuth from "next-auth";
import { consoleOrigin, getAuthOptions } from "../../../../server/auth";
import { getPool } from "../../../../server/db";
import { getLogger } from "../../../../server/logger";

export const dynamic = "force-dynamic";

type RouteContext = { params: Promise<{ nextauth: string[] }> };

/**
 * A credentials sign-in while the account or the client address is throttled: 429 with
 * Retry-After, before the password is looked at. The body is next-auth's JSON answer (`url` with
 * `error=TooManyAttempts`), so its client reports the refusal instead of failing to parse it.
 */
const refuseThrottled = async (request: NextRequest, context: RouteContext): Promise<Response | null> => {
  const [action, provider] = (await context.params).nextauth ?? [];
  if (request.method !== "POST" || action !== "callback" || provider !== "credentials") return null;
  const form = new URLSearchParams(await request.clone().text());
  const email = form.get("email")?.trim().toLowerCase();
  if (!email) return null;
  const address = clientAddressOf(request);
  const retryAfterS = await signInRetryAfter(getPool(), { email, address });
  if (retryAfterS === null) return null;
  getLogger().warn("console sign-in refused: throttled", { email, address, retryAfterS });
  const url = `${consoleOrigin()}/signin?error=TooManyAttempts&retry_after=${retryAfterS}`;
  return Response.json(
    { url, message: `too many failed sign-ins; retry after ${retryAfterS} s` },
    { status: 429, headers: { "retry-after": String(retryAfterS), "cache-control": "no-store" } },
  );
};

/** next-auth's routes (sign-in, sign-out, CSRF token, session) for the App Router, behind the sign-in throttle. */
const handler = async (request: NextRequest, context: RouteContext): Promise<Response> =>
  (await refuseThrottled(request, context)) ?? NextAuth(getAuthOptions())(request, context);

export { handler as GET, handler as POST };
