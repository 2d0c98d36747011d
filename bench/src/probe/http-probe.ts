// Probe (not part of the suite): single enqueues over the producer HTTP API (SDK client → the API's
// test server, in this process) on a fresh `porter_perf` database, with a CPU profile (PROFILE=file).
//   npx tsx bench/src/probe/http-probe.ts [calls] [concurrency]
//   EXTERNAL=bench/src/probe/http-client.mjs …: the client in another process (CPU = the server's alone)
import { startTestServer } from "@porter/api/testing/http-server";
import { createApiKey, PolicyCache } from "@porter/core";
import { createPrisma } from "@porter/db/prisma";
import { createProducerClient } from "@porter/sdk";
import { freshPerfDatabase, startProfile } from "./perf-db";

const [calls, concurrency] = [Number(process.argv[2] ?? 2000), Number(process.argv[3] ?? 1)];
const pool = await freshPerfDatabase({ connections: 26 });
const prisma = createPrisma(pool);
const server = await startTestServer({ db: pool, prisma, policyCache: new PolicyCache({ ttlMs: 1000 }) });
const { key } = await createApiKey(prisma, { tenantIds: ["bench"], jobTypes: ["*"], name: "probe", actor: "probe", ratePerSecond: 1_000_000 });
const client = createProducerClient({ url: server.url, apiKey: key });
let k = 0;
const one = () => client.enqueue({ job_type: "bench.job", payload: { k: ++k }, idempotency_key: `k-${k}` });
for (let i = 0; i < 50; i++) await one();
const profile = await startProfile();
const c0 = process.cpuUsage();
const t0 = performance.now();
if (process.env.EXTERNAL) {
  // The client in another process: this process's CPU is the server's alone.
  const { execFile } = await import("node:child_process");
  const { promisify } = await import("node:util");
  const { stdout } = await promisify(execFile)("node", [process.env.EXTERNAL, server.url, key, String(calls), String(concurrency)]);
  process.stdout.write(stdout);
} else {
  let left = calls;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (left-- > 0) await one();
    }),
  );
}
const s = (performance.now() - t0) / 1000;
const c = process.cpuUsage(c0);
await profile.stop();
console.log(
  `${calls} calls at c=${concurrency}: ${(calls / s).toFixed(0)}/s, ${((s * 1000) / calls).toFixed(2)} ms/call wall, ${((c.user + c.system) / 1000 / calls).toFixed(2)} ms CPU/call`,
);
await server.close();
await prisma.$disconnect();
await pool.end();
