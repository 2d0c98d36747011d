import { refuseMetrics } from "../../../lib/metrics-auth";
import { getEnv } from "../../../server/env";
import { getConsoleMetrics } from "../../../server/metrics/instance";

export const dynamic = "force-dynamic";

/**
 * Prometheus text from the console's own prom-client registry (server/metrics/console-metrics.ts;
 * docs/observability.md "Prometheus" lists every metric and its cost).
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
  const { body, contentType } = await getConsoleMetrics().render();
  return new Response(body, { headers: { "content-type": contentType, "cache-control": "no-store" } });
}
