import { fork } from "node:child_process";
import { fileURLToPath } from "node:url";
import { createApiKey } from "@porter/core";
import { createPrisma } from "@porter/db/prisma";
import { createProducerClient } from "@porter/sdk";
import type pg from "pg";
import { PORTER_TENANT, porterInput } from "./porter";
import type { HttpProducer } from "./types";

const SERVER = fileURLToPath(new URL("./porter-http-server.ts", import.meta.url));

/**
 * Porter's producer API over real HTTP, as a producer service sees it: the server in a process of
 * its own (porter-http-server.ts: `createNodeTrpcHandler`, what the console's server,
 * apps/console/src/server/serve.ts, answers producer calls with under `npm start`, with its own
 * pool of `connections` and key cache), called from this process with the SDK's producer client
 * and an API key from core's `createApiKey`.
 */
export const startPorterHttp = async (pool: pg.Pool, url: string, connections: number): Promise<HttpProducer> => {
  const child = fork(SERVER, [url, String(connections)], { execArgv: ["--import", import.meta.resolve("tsx")], stdio: ["ignore", 2, 2, "ipc"] });
  const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
  const serverUrl = await new Promise<string>((resolve, reject) => {
    child.once("message", (m: { type: string; url: string }) => resolve(m.url));
    void exited.then((code) => reject(new Error(`the producer API's server exited with code ${code}`)));
  });
  const prisma = createPrisma(pool);
  // The key's own call rate, far above what the bench sends: every call still pays for the rate
  // limit's bookkeeping (the key cache's), none is refused.
  const { key } = await createApiKey(prisma, { tenantIds: [PORTER_TENANT], jobTypes: ["*"], name: "bench", actor: "bench", ratePerSecond: 1_000_000 });
  await prisma.$disconnect();
  const client = createProducerClient({ url: serverUrl, apiKey: key });
  const request = ({ tenant_id: _tenant, ...rest }: ReturnType<typeof porterInput>) => rest;
  return {
    enqueueOne: async (job) => (await client.enqueue(request(porterInput(job)))).job_id,
    enqueueBatch: async (jobs) => (await client.enqueueBatch(jobs.map((j) => request(porterInput(j))))).map((r) => r.job_id),
    close: async () => {
      child.kill("SIGTERM");
      await exited;
    },
  };
};
