import { fork } from "node:child_process";
import { createApiKey } from "@porter/core";
import { createPrisma } from "@porter/db/prisma";
import { createProducerClient } from "@porter/sdk";
import type pg from "pg";
import { processCpuMs } from "../pg-ticks";
import { httpServerEntry } from "../worker/bundle";
import { PORTER_JOB_TYPE, PORTER_TENANT, porterInput } from "./porter";
import type { HttpProducer } from "./types";

/**
 * Porter's producer API over real HTTP, as a producer service sees it: the server in a process of
 * its own (porter-http-server.ts: `createNodeTrpcHandler`, what the console's server,
 * apps/console/src/server/serve.ts, answers producer calls with under `npm start`; bundled as
 * `npm start` bundles serve.ts, or through tsx with BENCH_WORKER=tsx: ../worker/bundle.ts), with its own
 * pool of `connections` and key cache), called from this process with the SDK's producer client
 * and an API key from core's `createApiKey`.
 */
export const startPorterHttp = async (pool: pg.Pool, url: string, connections: number): Promise<HttpProducer> => {
  // The node flags `npm start` gives the process serving the producer API: none beyond the bundle's
  // (apps/porter/src/launcher/console-args.ts).
  const entry = await httpServerEntry();
  const execArgv = [...entry.execArgv, ...(process.env.SERVER_PROF ? ["--cpu-prof", `--cpu-prof-dir=${process.env.SERVER_PROF}`] : [])];
  const child = fork(entry.path, [url, String(connections)], { execArgv, stdio: ["ignore", 2, 2, "ipc"] });
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
  // The server process is new (the direct path's process has run the warm-up pass and the
  // scenarios before): its single and batch paths warmed up first, as a server that has been
  // serving is — else the first phase measured (c=1 in (b)) is mostly its JIT and first key check.
  const warm = (n: number) => ({ job_type: PORTER_JOB_TYPE, payload: { warm: n }, idempotency_key: `warm-${n}` });
  for (let round = 0; round < 10; round++) await Promise.all(Array.from({ length: 32 }, (_, i) => client.enqueue(warm(round * 32 + i))));
  for (let round = 0; round < 2; round++) await client.enqueueBatch(Array.from({ length: 500 }, (_, i) => warm(1000 + round * 500 + i)));
  return {
    enqueueOne: async (job) => (await client.enqueue(request(porterInput(job)))).job_id,
    enqueueBatch: async (jobs) => (await client.enqueueBatch(jobs.map((j) => request(porterInput(j))))).map((r) => r.job_id),
    serverCpuMs: () => (child.pid === undefined ? Number.NaN : processCpuMs(child.pid)),
    close: async () => {
      child.kill("SIGTERM");
      await exited;
    },
  };
};
