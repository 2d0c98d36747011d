// Probe (not part of the suite): A/B of the producer API's serving paths, interleaved in one run on
// a fresh database (AB_DB, default porter_perf_http). Each round runs every variant for `calls`
// single enqueues at concurrency `c` (or, with BATCH=n, sequential enqueueBatch calls of n jobs),
// the SDK client in this process (as bench/src/systems/porter-http.ts), order rotated per round:
//   fetch      — the fetch adapter (handleTrpcRequest behind an IncomingMessage → Request bridge),
//                every call authenticated in the database (the path before issue 15)
//   fetch+kc   — the same with the key cache (core's KeyAuthCache)
//   node       — createNodeTrpcHandler without the key cache
//   node+kc    — createNodeTrpcHandler with the key cache (what porter-start serves)
//   trpc-client — node+kc called through tRPC's own client (httpLink over the global fetch: the
//                SDK's producer client before it sent calls over node:http keep-alive agents)
//   proc       — node+kc's server in a process of its own (bench/src/systems/porter-http-server.ts,
//                as the bench runs it), called with the SDK's client from this process
//   proc-trpc-client — the same server process, called through tRPC's own client
//   base       — BASE_TREE=<dir>: the server process of another checkout (an earlier commit, its
//                node_modules installed or hard-linked, porter-http-server.ts copied in), called
//                through tRPC's own client — "before" as a producer saw it
//   direct     — core's enqueueJobs in process (no HTTP)
// CPU per job is this process's: the client's alone for the proc variants.
//   npx tsx bench/src/probe/http-ab.ts <calls> <c> <rounds> [variant,…]   (PROFILE=<file>: CPU profile;
//   SERVER_PROFILE=<dir>: the server process's)
import { fork } from "node:child_process";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { Readable } from "node:stream";
import { type AppRouter, handleTrpcRequest, type TrpcHttpDeps } from "@porter/api";
import { createNodeTrpcHandler } from "@porter/api/node-http";
import { createApiKey, KeyAuthCache, PolicyCache } from "@porter/core";
import { createPrisma } from "@porter/db/prisma";
import { createProducerClient } from "@porter/sdk";
import { createTRPCClient, httpLink } from "@trpc/client";
import { directVariant, driveCalls, freshProbeDatabase, probeUrl, startProfile } from "./perf-db";

const DB = process.env.AB_DB ?? "porter_perf_http";
const URL = probeUrl(DB);
const [calls, concurrency, rounds] = [Number(process.argv[2] ?? 2000), Number(process.argv[3] ?? 32), Number(process.argv[4] ?? 3)];
const names = (process.argv[5] ?? "fetch,node+kc,direct").split(",");
const batch = Number(process.env.BATCH ?? 0);

const pool = await freshProbeDatabase(DB, { connections: 20 });
const prisma = createPrisma(pool);
const policyCache = new PolicyCache({ ttlMs: 1000 });
const { key } = await createApiKey(prisma, { tenantIds: ["bench"], jobTypes: ["*"], name: "ab", actor: "ab", ratePerSecond: 1_000_000 });

/** The bridge the API's test server used before issue 15: IncomingMessage → Request → handleTrpcRequest. */
const viaFetch = (deps: TrpcHttpDeps) => async (req: IncomingMessage, res: ServerResponse) => {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) if (typeof value === "string") headers.set(name, value);
  if (!headers.has("x-forwarded-for") && req.socket.remoteAddress) headers.set("x-forwarded-for", req.socket.remoteAddress);
  const hasBody = req.method !== "GET" && req.method !== "HEAD";
  const request = new Request(`http://${req.headers.host}${req.url}`, {
    method: req.method,
    headers,
    body: hasBody ? (Readable.toWeb(req) as unknown as ReadableStream<Uint8Array>) : undefined,
    duplex: "half",
  } as RequestInit);
  const response = await handleTrpcRequest(request, deps);
  res.writeHead(response.status, Object.fromEntries(response.headers));
  res.end(Buffer.from(await response.arrayBuffer()));
};

const serve = async (handler: (req: IncomingMessage, res: ServerResponse) => Promise<void>) => {
  const server = createServer((req, res) => void handler(req, res));
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => server.close() };
};

let k = 0;
const job = () => ({ job_type: "bench.job", payload: { k: ++k }, idempotency_key: `k-${k}` });
type Variant = { one: () => Promise<unknown>; many: (n: number) => Promise<unknown> };
const variants: Record<string, () => Promise<Variant>> = {};
for (const [name, fetchPath, cached] of [
  ["fetch", true, false],
  ["fetch+kc", true, true],
  ["node", false, false],
  ["node+kc", false, true],
] as const) {
  variants[name] = async () => {
    const deps: TrpcHttpDeps = { db: pool, prisma, policyCache, keyAuthCache: cached ? new KeyAuthCache(pool) : undefined };
    const server = await serve(fetchPath ? viaFetch(deps) : createNodeTrpcHandler(deps));
    const client = createProducerClient({ url: server.url, apiKey: key });
    return { one: () => client.enqueue(job()), many: (n) => client.enqueueBatch(Array.from({ length: n }, job)) };
  };
}
/** tRPC's own client: the SDK's producer client before (fetch + httpLink), without its error mapping. */
const trpcClient = (url: string) => {
  const trpc = createTRPCClient<AppRouter>({ links: [httpLink({ url: `${url}/api/trpc`, headers: { authorization: `Bearer ${key}` } })] });
  return { one: () => trpc.producer.enqueue.mutate(job()), many: (n: number) => trpc.producer.enqueueBatch.mutate({ jobs: Array.from({ length: n }, job) }) };
};
variants["trpc-client"] = async () => {
  const server = await serve(createNodeTrpcHandler({ db: pool, prisma, policyCache, keyAuthCache: new KeyAuthCache(pool) }));
  return trpcClient(server.url);
};
/** The bench's server process (its own pool of 20 and key cache). */
const serverProcess = async (file = new globalThis.URL("../systems/porter-http-server.ts", import.meta.url).pathname) => {
  // SERVER_PROFILE=<dir>: the server process's CPU profile (node --cpu-prof), written as it exits.
  const profiling = process.env.SERVER_PROFILE ? ["--cpu-prof", `--cpu-prof-dir=${process.env.SERVER_PROFILE}`] : [];
  // SERVER_IMPORT=<module>: preloaded in the server process (e.g. a statement counter).
  const preload = process.env.SERVER_IMPORT ? ["--import", process.env.SERVER_IMPORT] : [];
  const child = fork(file, [URL, "20"], { execArgv: [...profiling, ...preload, "--import", import.meta.resolve("tsx")], stdio: ["ignore", 2, 2, "ipc"] });
  process.on("exit", () => child.kill());
  return new Promise<string>((resolve) => child.once("message", (m: { url: string }) => resolve(m.url)));
};
variants.proc = async () => {
  const client = createProducerClient({ url: await serverProcess(), apiKey: key });
  return { one: () => client.enqueue(job()), many: (n) => client.enqueueBatch(Array.from({ length: n }, job)) };
};
variants["proc-trpc-client"] = async () => trpcClient(await serverProcess());
variants.base = async () => trpcClient(await serverProcess(`${process.env.BASE_TREE}/bench/src/systems/porter-http-server.ts`));
variants.direct = async () => directVariant(pool, job, policyCache);

const ready = Object.fromEntries(await Promise.all(names.map(async (n) => [n, await variants[n]!()] as const)));
// Warm-up: every variant's path (and a server process's JIT) through the calls it is measured with.
for (const v of Object.values(ready)) {
  for (let i = 0; i < 30; i++) await v.one();
  for (let i = 0; i < (batch > 0 ? 5 : 0); i++) await v.many(batch);
}
const results: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
const cpu: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
// PROFILE=<file>: a CPU profile of the measured rounds.
const profile = await startProfile();
for (let round = 0; round < rounds; round++) {
  const order = names.map((_, i) => names[(i + round) % names.length]!);
  for (const name of order) {
    const v = ready[name]!;
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    const jobs = calls;
    await driveCalls(v, calls, concurrency, batch);
    const s = (performance.now() - t0) / 1000;
    const c = process.cpuUsage(c0);
    results[name]!.push(jobs / s);
    cpu[name]!.push((c.user + c.system) / 1000 / jobs);
    console.log(
      `round ${round + 1} ${name.padEnd(16)} ${(jobs / s).toFixed(0).padStart(6)} jobs/s  ${((c.user + c.system) / 1000 / jobs).toFixed(3)} ms CPU/job (this process)`,
    );
  }
}
await profile.stop();
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const base = median(results[names[0]!]!);
console.log(`\nmedians (${batch > 0 ? `batches of ${batch}` : `c=${concurrency}`}, ${calls} ${batch > 0 ? "jobs" : "calls"} per run, ${rounds} rounds):`);
for (const n of names) {
  console.log(
    `${n.padEnd(16)} ${median(results[n]!).toFixed(0).padStart(6)} jobs/s  ${(median(results[n]!) / base).toFixed(2)}× ${names[0]}  ${median(cpu[n]!).toFixed(3)} ms CPU/job`,
  );
}
// The load moves within seconds: a variant against direct in the same round, then the median.
if (results.direct) {
  console.log("\n÷ direct, round by round (median; all rounds):");
  for (const n of names.filter((x) => x !== "direct")) {
    const ratios = results[n]!.map((r, i) => r / results.direct![i]!);
    console.log(`${n.padEnd(16)} ${median(ratios).toFixed(2)}×  (${ratios.map((r) => r.toFixed(2)).join(" ")})`);
  }
}
process.exit(0);
