import { type NextRequest, NextResponse } from "next/server";
import { securityHeaders } from "./lib/security-headers";
import { getPrisma } from "./server/db";
import { getEnv } from "./server/env";
import { statusOrigins, statusTenantOfPath } from "./server/status-origins";

/**
 * Every request (Next 16 "proxy", formerly middleware): a fresh CSP nonce, passed to Next on the
 * request's own Content-Security-Policy header (Next puts it on the scripts it renders; pages are
 * rendered per request, see the root layout), and the security headers of lib/security-headers.ts
 * on the response. https — NEXTAUTH_URL or the request itself — adds HSTS. A tenant status page
 * (/status/<tenant_id>/…) may be framed by the origins its tenant lists (status_origins, read
 * through a few seconds' in-process cache: server/status-origins.ts); proxy runs on Node in Next 16.
 */
export async function proxy(request: NextRequest): Promise<NextResponse> {
  const nonce = Buffer.from(crypto.getRandomValues(new Uint8Array(16))).toString("base64");
  const isHttps = request.nextUrl.protocol === "https:" || (getEnv().NEXTAUTH_URL?.startsWith("https://") ?? false);
  const tenantId = statusTenantOfPath(request.nextUrl.pathname);
  const frameAncestors = tenantId ? await statusOrigins(getPrisma(), tenantId) : [];
  const headers = securityHeaders({ nonce, isHttps, isDev: process.env.NODE_ENV === "development", frameAncestors });
  const requestHeaders = new Headers(request.headers);
  requestHeaders.set("content-security-policy", headers["content-security-policy"]!);
  const response = NextResponse.next({ request: { headers: requestHeaders } });
  for (const [name, value] of Object.entries(headers)) response.headers.set(name, value);
  // Tenant status pages (issue 13) are per viewer and carry a tenant's data: never cached by a
  // browser's shared cache or a proxy, and never sent as a Referer elsewhere. no-transform: the
  // live stream (/status/<tenant>/events) must reach the browser unbuffered, and Next's
  // compression leaves a no-transform response alone.
  if (isStatusPath(request.nextUrl.pathname)) {
    response.headers.set("cache-control", "private, no-store, no-transform");
    response.headers.set("referrer-policy", "no-referrer");
  }
  return response;
}

/** /status and everything under it: the tenant status pages and the link route (no console sign-in). */
const isStatusPath = (pathname: string): boolean => pathname === "/status" || pathname.startsWith("/status/");
