import { handleStatusEvents } from "@porter/api";
import { cookies } from "next/headers";
import { getConsoleSession } from "../../../../server/auth";
import { getPool, getPrisma } from "../../../../server/db";
import { getEnv } from "../../../../server/env";
import { STATUS_COOKIE, verifyStatusCookie } from "../../../../server/status-link-cookie";
import { getStreamHub, getStreamLimiter } from "../../../../server/stream";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/**
 * The status page's live stream (issue 13): the status cookie's link (its Path is this tenant's
 * /status/<tenant_id>, so the browser's EventSource sends it here), verified and re-checked every
 * 30 s, else an operator's console session; anything else 404s, as the page does.
 */
export const GET = async (request: Request, { params }: { params: Promise<{ tenant_id: string }> }): Promise<Response> => {
  const { tenant_id: raw } = await params;
  const store = await cookies();
  const linkId = verifyStatusCookie(getEnv().AUTH_SECRET, store.get(STATUS_COOKIE)?.value);
  const session = linkId ? null : await getConsoleSession().catch(() => null);
  const operator = session && (session.role === "operator" || session.role === "admin") ? { email: session.email } : null;
  return handleStatusEvents(
    request,
    { tenantId: decodeURIComponent(raw), linkId, operator },
    { db: getPool(), prisma: getPrisma(), hub: getStreamHub(), limiter: getStreamLimiter() },
  );
};
