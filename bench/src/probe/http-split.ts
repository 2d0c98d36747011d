// Probe (not part of the suite): the producer API's CPU per call, split between the client (this
// process, the SDK), the server (a process of its own: bench/src/systems/porter-http-server.ts, as
// the bench runs it) and PostgreSQL (the backends of the server's pool, read from /proc), for
// single enqueues at concurrency `c` (or, with BATCH=n, sequential enqueueBatch calls of n jobs).
// Variants, interleaved, order rotated per round, on a fresh database (SPLIT_DB, default
// porter_perf_http_split):
//   proc   — this tree's server process (its sources through tsx), this tree's SDK client
//   bundle — the same server as the bench runs it: its esbuild bundle (../worker/bundle.ts)
//   alone  — the same with the SDK's joinEnqueues: false (every enqueue a request of its own)
//   base   — BASE_TREE=<dir>: the server process and the SDK of another checkout (its node_modules
//            installed or hard-linked) — "before"
//   direct — core's enqueueJobs in this process (its backends' CPU counted as PostgreSQL's)
//   npx tsx bench/src/probe/http-split.ts <calls> <c> <rounds> [variant,…]
import { type ChildProcess, fork } from "node:child_process";
import { readFileSync } from "node:fs";
import { createApiKey, PolicyCache } from "@porter/core";
import { createPrisma } from "@porter/db/prisma";
import { createProducerClient } from "@porter/sdk";
import { httpServerEntry } from "../worker/bundle";
import { directVariant, driveCalls, freshProbeDatabase, probeUrl } from "./perf-db";

const DB = process.env.SPLIT_DB ?? "porter_perf_http_split";
const URL = probeUrl(DB);
const [calls, concurrency, rounds] = [Number(process.argv[2] ?? 3000), Number(process.argv[3] ?? 32), Number(process.argv[4] ?? 3)];
const names = (process.argv[5] ?? "proc,direct").split(",");
const batch = Number(process.env.BATCH ?? 0);
const CONNECTIONS = 26;

const pool = await freshProbeDatabase(DB, { connections: CONNECTIONS, applicationName: "split-direct" });
const prisma = createPrisma(pool);
const policyCache = new PolicyCache({ ttlMs: 1000 });
const { key } = await createApiKey(prisma, { tenantIds: ["bench"], jobTypes: ["*"], name: "split", actor: "split", ratePerSecond: 1_000_000 });

/** CPU seconds (user + system) of a process, from /proc (clock ticks of 10 ms). */
const cpuOf = (pid: number): number => {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return 0;
  }
};
/** The backends of this database (the server's pool and this process's): CPU seconds, summed. */
const backendsCpu = async (): Promise<number> => {
  const { rows } = await pool.query<{ pid: number }>(`SELECT pid FROM pg_stat_activity WHERE datname = $1`, [DB]);
  return rows.reduce((sum, r) => sum + cpuOf(r.pid), 0);
};

let k = 0;
const job = () => ({ job_type: "bench.job", payload: { k: ++k }, idempotency_key: `k-${k}` });
type Variant = { one: () => Promise<unknown>; many: (n: number) => Promise<unknown>; pid?: number };
const children: ChildProcess[] = [];
process.on("exit", () => {
  for (const c of children) c.kill();
});
const serverProcess = async (tree: string, bundled?: string) => {
  // SERVER_PROFILE=<dir>: the server's CPU profile; SERVER_NODE_ARGS: more node flags (e.g. --perf-basic-prof).
  const profiling = process.env.SERVER_PROFILE ? ["--cpu-prof", `--cpu-prof-dir=${process.env.SERVER_PROFILE}`] : [];
  profiling.push(...(process.env.SERVER_NODE_ARGS?.split(" ").filter(Boolean) ?? []));
  const child = fork(bundled ?? `${tree}/bench/src/systems/porter-http-server.ts`, [URL, String(CONNECTIONS)], {
    cwd: tree,
    execArgv: [...profiling, ...(bundled ? [] : ["--import", import.meta.resolve("tsx")])],
    stdio: ["ignore", 2, 2, "ipc"],
  });
  children.push(child);
  const url = await new Promise<string>((resolve) => child.once("message", (m: { url: string }) => resolve(m.url)));
  console.log(`server ${tree}: pid ${child.pid}`);
  return { url, pid: child.pid! };
};
const httpVariant = async (tree: string, sdk: typeof createProducerClient, joinEnqueues?: boolean, bundled?: string): Promise<Variant> => {
  const server = await serverProcess(tree, bundled);
  const client = sdk({ url: server.url, apiKey: key, joinEnqueues });
  return { one: () => client.enqueue(job()), many: (n) => client.enqueueBatch(Array.from({ length: n }, job)), pid: server.pid };
};
const here = new globalThis.URL("../../..", import.meta.url).pathname.replace(/\/$/, "");
const variants: Record<string, () => Promise<Variant>> = {
  proc: () => httpVariant(here, createProducerClient),
  bundle: async () => httpVariant(here, createProducerClient, undefined, (await httpServerEntry()).path),
  // this tree, each enqueue its own request (the SDK's joinEnqueues: false)
  alone: () => httpVariant(here, createProducerClient, false),
  base: async () => {
    const tree = process.env.BASE_TREE!;
    const sdk = (await import(`${tree}/packages/sdk/src/index.ts`)) as { createProducerClient: typeof createProducerClient };
    return httpVariant(tree, sdk.createProducerClient);
  },
  direct: async () => directVariant(pool, job, policyCache),
};

const ready: Record<string, Variant> = {};
for (const n of names) ready[n] = await variants[n]!();
// Warm-up: each path (and each server process's JIT) through the calls it is measured with.
for (const v of Object.values(ready)) {
  for (let w = 0; w < 3; w++) {
    if (batch > 0) for (let i = 0; i < 3; i++) await v.many(batch);
    else {
      let left = 500;
      await Promise.all(
        Array.from({ length: concurrency }, async () => {
          while (left-- > 0) await v.one();
        }),
      );
    }
  }
}
type Row = { rate: number; client: number; server: number; pg: number };
const results: Record<string, Row[]> = Object.fromEntries(names.map((n) => [n, []]));
const load = () => readFileSync("/proc/loadavg", "utf8").split(" ")[0];
for (let round = 0; round < rounds; round++) {
  const order = names.map((_, i) => names[(i + round) % names.length]!);
  for (const name of order) {
    const v = ready[name]!;
    const pg0 = await backendsCpu();
    const s0 = v.pid ? cpuOf(v.pid) : 0;
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    await driveCalls(v, calls, concurrency, batch);
    const s = (performance.now() - t0) / 1000;
    const c = process.cpuUsage(c0);
    const row: Row = {
      rate: calls / s,
      client: (c.user + c.system) / 1000 / calls,
      server: v.pid ? ((cpuOf(v.pid) - s0) * 1000) / calls : 0,
      pg: (((await backendsCpu()) - pg0) * 1000) / calls,
    };
    results[name]!.push(row);
    console.log(
      `round ${round + 1} ${name.padEnd(8)} ${row.rate.toFixed(0).padStart(6)} jobs/s  CPU ms/job: client ${row.client.toFixed(3)} server ${row.server.toFixed(3)} pg ${row.pg.toFixed(3)}  (load ${load()})`,
    );
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
console.log(`\nmedians (${batch > 0 ? `batches of ${batch}` : `c=${concurrency}`}, ${calls} ${batch > 0 ? "jobs" : "calls"} per run, ${rounds} rounds):`);
for (const n of names) {
  const rs = results[n]!;
  const ratio = results.direct && n !== "direct" ? `  ${median(rs.map((r, i) => r.rate / results.direct![i]!.rate)).toFixed(2)}× direct` : "";
  console.log(
    `${n.padEnd(8)} ${median(rs.map((r) => r.rate))
      .toFixed(0)
      .padStart(
        6,
      )} jobs/s${ratio}  CPU ms/job: client ${median(rs.map((r) => r.client)).toFixed(3)} server ${median(rs.map((r) => r.server)).toFixed(3)} pg ${median(rs.map((r) => r.pg)).toFixed(3)}`,
  );
}
process.exit(0);
