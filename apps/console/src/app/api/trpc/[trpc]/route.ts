import { createSessionReader, handleTrpcRequest } from "@porter/api";
import { getSessionUserCache, isSecureCookie } from "../../../../server/auth";
import { getPolicyCache, getPool, getPrisma, getReplica } from "../../../../server/db";
import { getEnv } from "../../../../server/env";
import { getLogger } from "../../../../server/logger";
import { getStreamNotifier } from "../../../../server/stream";

export const dynamic = "force-dynamic";

/**
 * tRPC over HTTP: producer procedures (Bearer key) and console procedures (the next-auth session
 * cookie, its session version checked; mutations must be same-origin JSON). Producer keys are
 * rate-limited (PORTER_API_KEY_RATE unless the key has its own rate) and failed keys throttled.
 * The body is capped before parsing (@porter/api http.ts).
 */
const handler = (request: Request): Promise<Response> => {
  const env = getEnv();
  return handleTrpcRequest(request, {
    db: getPool(),
    prisma: getPrisma(),
    getSession: createSessionReader({ prisma: getPrisma(), secret: env.AUTH_SECRET, isSecureCookie: isSecureCookie(), cache: getSessionUserCache() }),
    keyAuthLimits: { defaultRatePerSecond: env.PORTER_API_KEY_RATE },
    trustedOrigins: env.NEXTAUTH_URL ? [new URL(env.NEXTAUTH_URL).origin] : [],
    policyCache: getPolicyCache(),
    // Heavy console reads on the read replica when there is one (docs/scaling.md "Replica reads").
    replica: getReplica() ?? undefined,
    streamNotifier: getStreamNotifier(),
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
