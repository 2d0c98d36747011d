import { createSessionReader, type TrpcHttpDeps } from "@porter/api";
import { getSessionUserCache, isSecureCookie } from "./auth";
import { getKeyAuthCache, getPolicyCache, getPool, getPrisma, getReplica } from "./db";
import { getEnv } from "./env";
import { getLogger } from "./logger";
import { getStreamNotifier } from "./stream";

/**
 * What the console serves tRPC with — Next's `/api/trpc/[trpc]` route and the producer front of
 * serve.ts alike: producer keys rate-limited (PORTER_API_KEY_RATE unless the key has its own rate),
 * verified through the process's key cache, failed keys throttled; console sessions read from the
 * next-auth cookie; the body capped before parsing (@porter/api http.ts).
 */
export const trpcDeps = (): TrpcHttpDeps => {
  const env = getEnv();
  return {
    db: getPool(),
    prisma: getPrisma(),
    getSession: createSessionReader({ prisma: getPrisma(), secret: env.AUTH_SECRET, isSecureCookie: isSecureCookie(), cache: getSessionUserCache() }),
    keyAuthLimits: { defaultRatePerSecond: env.PORTER_API_KEY_RATE },
    keyAuthCache: getKeyAuthCache(),
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
  };
};
