import type { NextRequest } from "next/server";
import NextAuth from "next-auth";
import { getAuthOptions } from "../../../../server/auth";

export const dynamic = "force-dynamic";

/** next-auth's routes (sign-in, sign-out, CSRF token, session) for the App Router. */
const handler = (request: NextRequest, context: { params: Promise<{ nextauth: string[] }> }): Promise<Response> =>
  NextAuth(getAuthOptions())(request, context);

export { handler as GET, handler as POST };
