import { countsByState } from "@porter/core";
import { refuseMetrics } from "../../../lib/metrics-auth";
import { getPool } from "../../../server/db";
import { getEnv } from "../../../server/env";
import { getLogger } from "../../../server/logger";

export const dynamic = "force-dynamic";

const label = (value: string) => value.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");

/**
 * Prometheus text: jobs by queue and state, and whether the database answered the scrape.
 * Bearer `PORTER_METRICS_TOKEN`; open without one only while the console listens on loopback.
 */
export async function GET(request: Request): Promise<Response> {
  const env = getEnv();
  const refusal = refuseMetrics(request.headers.get("authorization"), {
    host: env.HOST,
    ...(env.PORTER_METRICS_TOKEN ? { token: env.PORTER_METRICS_TOKEN } : {}),
  });
  if (refusal) {
    return new Response(`${refusal.message}\n`, {
      status: refusal.status,
      headers: {
        "content-type": "text/plain; charset=utf-8",
        "cache-control": "no-store",
        ...(refusal.status === 401 ? { "www-authenticate": "Bearer" } : {}),
      },
    });
  }
  const lines = ["# HELP porter_up Whether the console could read the database for this scrape.", "# TYPE porter_up gauge"];
  try {
    const counts = await countsByState(getPool());
    lines.push("porter_up 1");
    lines.push("# HELP porter_jobs Jobs by queue and state (live and retained finished jobs).", "# TYPE porter_jobs gauge");
    for (const { queue_id, state, count } of counts) {
      lines.push(`porter_jobs{queue="${label(queue_id)}",state="${label(state)}"} ${count}`);
    }
  } catch (error) {
    getLogger().warn("metrics scrape could not read the database", { err: (error as Error).message });
    lines.push("porter_up 0");
  }
  return new Response(`${lines.join("\n")}\n`, {
    headers: { "content-type": "text/plain; version=0.0.4; charset=utf-8", "cache-control": "no-store" },
  });
}
