import { checkHealth } from "@porter/api";
import { getPool } from "../../../server/db";

export const dynamic = "force-dynamic";

/** 200 `{status:"ok", database:"up"}` when the process and the database answer; 503 otherwise. */
export async function GET(): Promise<Response> {
  const report = await checkHealth(getPool());
  return Response.json(report, { status: report.status === "ok" ? 200 : 503, headers: { "cache-control": "no-store" } });
}
