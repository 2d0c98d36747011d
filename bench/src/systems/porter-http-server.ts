// The producer API's server of the bench, in a process of its own (as `npm start` serves it from
// the console's process, not the producer's): started by porter-http.ts with the database URL and
// its pool size as argv[2..3], it answers on an ephemeral port and reports the URL over IPC;
// SIGTERM closes it. What it serves is `createNodeTrpcHandler` (the API's test server), with its own
// key cache and a policy cache held as the console holds it (1 s).
import { startTestServer } from "@porter/api/testing/http-server";
import { PolicyCache } from "@porter/core";
import { createPool } from "@porter/db/pool";
import { createPrisma } from "@porter/db/prisma";

const [url, connections] = [process.argv[2]!, Number(process.argv[3] ?? 10)];
const pool = createPool(url, { max: connections, applicationName: "bench-porter-http" });
const prisma = createPrisma(pool);
const server = await startTestServer({ db: pool, prisma, policyCache: new PolicyCache({ ttlMs: 1000 }) });
process.send?.({ type: "ready", url: server.url });
process.on("SIGTERM", () => {
  void server
    .close()
    .then(() => prisma.$disconnect())
    .then(() => pool.end())
    .finally(() => process.exit(0));
});
