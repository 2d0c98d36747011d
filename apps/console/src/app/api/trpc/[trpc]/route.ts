import { handleTrpcRequest } from "@porter/api";
import { getPool, getRegistry } from "../../../../server/db";
import { getEnv } from "../../../../server/env";
import { getLogger } from "../../../../server/logger";

export const dynamic = "force-dynamic";

/** tRPC over HTTP: producer and console procedures (body capped before parsing, see @porter/api http.ts). */
const handler = (request: Request): Promise<Response> => {
  const env = getEnv();
  return handleTrpcRequest(request, {
    pool: getPool(),
    registry: getRegistry(),
    maxBodyBytes: env.PORTER_MAX_BODY_BYTES,
    maxPayloadBytes: env.PORTER_MAX_PAYLOAD_BYTES,
    onError: ({ error, path, type }) => {
      // 4xx are the caller's business; 5xx carry a cause we keep in the logs only.
      if (error.code === "INTERNAL_SERVER_ERROR") {
        getLogger().error("tRPC procedure failed", { path, type, err: error.cause ?? error });
      }
    },
  });
};

export { handler as GET, handler as POST };
