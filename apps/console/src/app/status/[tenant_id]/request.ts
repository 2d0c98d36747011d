import { READ_LSN_COOKIE } from "@porter/api";
import { isLsn } from "@porter/db/read-replica";
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

/** The WAL position this browser's last console write left (reads.ts), for reads on the replica; null when none. */
export const readLsn = async (): Promise<string | null> => {
  const value = (await cookies()).get(READ_LSN_COOKIE)?.value;
  return value && isLsn(value) ? value : null;
};
