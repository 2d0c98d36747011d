import { handleTrpcRequest } from "@porter/api";
import { trpcDeps } from "../../../../server/trpc-deps";

export const dynamic = "force-dynamic";

/**
 * tRPC over HTTP: producer procedures (Bearer key) and console procedures (the next-auth session
 * cookie, its session version checked; mutations must be same-origin JSON). Under `npm start` the
 * producer procedures (alone, or in a batch of producer procedures only) never reach this route:
 * the console's server (server/serve.ts) answers them itself, before Next; every console procedure
 * comes here. Both use the same deps (server/trpc-deps.ts).
 */
const handler = (request: Request): Promise<Response> => handleTrpcRequest(request, trpcDeps());

export { handler as GET, handler as POST };
