import { checkHealth } from "@porter/api";
import { getPool, getReplica } from "../../../server/db";

export const dynamic = "force-dynamic";

/**
 * 200 `{status:"ok", database:"up"}` when the process and the database answer; 503 otherwise. With a
 * read replica (PORTER_READ_DATABASE_URL), `replica: {state: "up"|"lagging"|"down", lag_s}` too: a
 * replica that is down or lagging leaves the status ok (its reads go to the primary).
 */
export async function GET(): Promise<Response> {
  const report = await checkHealth(getPool(), { replica: getReplica()?.router });
  return Response.json(report, { status: report.status === "ok" ? 200 : 503, headers: { "cache-control": "no-store" } });
}
