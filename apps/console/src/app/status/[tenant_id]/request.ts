import { cookies } from "next/headers";
import { getConsoleSession } from "../../../server/auth";
import { getEnv } from "../../../server/env";
import { STATUS_COOKIE } from "../../../server/status-link-cookie";
import type { StatusRequest } from "../../../server/status-page";

/** The status request of the current page: its tenant, the status cookie, the console session's role. */
export const statusRequest = async (rawTenantId: string): Promise<StatusRequest> => {
  const store = await cookies();
  const session = await getConsoleSession().catch(() => null);
  return {
    tenantId: decodeURIComponent(rawTenantId),
    cookie: store.get(STATUS_COOKIE)?.value,
    secret: getEnv().AUTH_SECRET,
    sessionRole: session?.role ?? null,
  };
};
