import { resolveStatusLink } from "@porter/core";
import { isSecureCookie } from "../../../../server/auth";
import { getPrisma } from "../../../../server/db";
import { getEnv } from "../../../../server/env";
import { statusCookieHeader } from "../../../../server/status-link-cookie";
import { statusOrigins } from "../../../../server/status-origins";

export const dynamic = "force-dynamic";

const refused = () =>
  new Response("This status link is not valid: it may have expired or been revoked. Ask for a new one.\n", {
    status: 404,
    headers: { "content-type": "text/plain; charset=utf-8", "cache-control": "private, no-store", "referrer-policy": "no-referrer" },
  });

/**
 * GET /status/link/<token>: following a tenant status link (issue 13). A valid token sets the
 * tenant's status cookie (server/status-link-cookie.ts) and redirects (303) to /status/<tenant_id>,
 * so the token leaves the address bar and history; an unknown, expired or revoked token is a
 * plain 404 and sets nothing. A tenant that embeds its page gets a cookie that works in a frame
 * (status-link-cookie.ts).
 */
export async function GET(_request: Request, { params }: { params: Promise<{ token: string }> }): Promise<Response> {
  const { token } = await params;
  const link = await resolveStatusLink(getPrisma(), token);
  if (!link) return refused();
  const secure = isSecureCookie() || _request.url.startsWith("https://");
  const isEmbeddable = (await statusOrigins(getPrisma(), link.tenantId)).length > 0;
  return new Response(null, {
    status: 303,
    headers: {
      location: `/status/${encodeURIComponent(link.tenantId)}`,
      "set-cookie": statusCookieHeader({
        secret: getEnv().AUTH_SECRET,
        linkId: link.id,
        tenantId: link.tenantId,
        expiresAt: link.expiresAt,
        isSecure: secure,
        isEmbeddable,
      }),
      "cache-control": "private, no-store",
      "referrer-policy": "no-referrer",
    },
  });
}
