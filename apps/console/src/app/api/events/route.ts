import { handleProducerEvents } from "@porter/api";
import { getPool } from "../../../server/db";
import { getEnv } from "../../../server/env";
import { getStreamHub, getStreamLimiter } from "../../../server/stream";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/**
 * The live status stream of a producer key (issue 13; docs/tenant-status.md "Live status stream"):
 * `Authorization: Bearer <key>`, `?job_id=` for one job. A thin wrapper over @porter/api's
 * framework-free handler (events/sse.ts), which the tests serve from node:http too.
 */
export const GET = (request: Request): Promise<Response> =>
  handleProducerEvents(request, {
    db: getPool(),
    hub: getStreamHub(),
    limiter: getStreamLimiter(),
    keyAuthLimits: { defaultRatePerSecond: getEnv().PORTER_API_KEY_RATE },
  });
