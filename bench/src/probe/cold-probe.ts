// Probe (not part of the suite): what a claim costs on a session new to it. Times an empty claim's
// first executions on a few fresh connections: the first compiles `porter_claim` and plans its
// statements, the next ones run on the session's cached plans (docs/performance.md, "idle latency").
//   npx tsx bench/src/probe/cold-probe.ts [connections=3] [executions=12]
import { claimBatch } from "@porter/core";
import pg from "pg";
import { freshPerfDatabase, PERF_URL } from "./perf-db";

const connections = Number(process.argv[2] ?? 3);
const executions = Number(process.argv[3] ?? 12);
const setup = await freshPerfDatabase({ connections: 1 });
await setup.end();
for (let c = 0; c < connections; c++) {
  const client = new pg.Client(PERF_URL);
  await client.connect();
  const ms: string[] = [];
  for (let i = 0; i < executions; i++) {
    const startedAt = performance.now();
    await claimBatch(client, { poolId: "bench", workerId: "00000000-0000-0000-0000-000000000000", limit: 24 });
    ms.push((performance.now() - startedAt).toFixed(1));
  }
  console.log(`connection ${c + 1}: an empty claim's executions, ms: ${ms.join(" ")}`);
  await client.end();
}
