import { startTestServer } from "@porter/api/testing/http-server";
import { createApiKey, type PolicyCache } from "@porter/core";
import { createPrisma } from "@porter/db/prisma";
import { createProducerClient } from "@porter/sdk";
import type pg from "pg";
import { PORTER_TENANT, porterInput } from "./porter";
import type { HttpProducer } from "./types";

/**
 * Porter's producer API over real HTTP, in this process: `createNodeTrpcHandler` (what the console's
 * server, apps/console/src/server/serve.ts, answers producer calls with under `npm start`) with a
 * key cache of its own, served by node:http on an ephemeral port (the API's own test server),
 * called with the SDK's producer client and an API key from core's `createApiKey` — what a producer
 * service does.
 */
export const startPorterHttp = async (pool: pg.Pool, policyCache: PolicyCache): Promise<HttpProducer> => {
  const prisma = createPrisma(pool);
  const server = await startTestServer({ db: pool, prisma, policyCache });
  // The key's own call rate, far above what the bench sends: every call still pays for the rate
  // limit's bookkeeping (the same single statement), none is refused.
  const { key } = await createApiKey(prisma, { tenantIds: [PORTER_TENANT], jobTypes: ["*"], name: "bench", actor: "bench", ratePerSecond: 1_000_000 });
  const client = createProducerClient({ url: server.url, apiKey: key });
  const request = ({ tenant_id: _tenant, ...rest }: ReturnType<typeof porterInput>) => rest;
  return {
    enqueueOne: async (job) => (await client.enqueue(request(porterInput(job)))).job_id,
    enqueueBatch: async (jobs) => (await client.enqueueBatch(jobs.map((j) => request(porterInput(j))))).map((r) => r.job_id),
    close: async () => {
      await server.close();
      await prisma.$disconnect();
    },
  };
};
