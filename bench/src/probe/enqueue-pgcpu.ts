// Probe (not part of the suite): PostgreSQL's CPU per 1000-job enqueue, by variant of the insert
// statement or the schema, interleaved (A, B, C, A, B, C …) on databases of their own. Each call is
// BEGIN, the chunks of 250 rows as `enqueueJobs` sends them, COMMIT on one connection; the figure is
// that backend's own CPU time (/proc/<pid>/schedstat, nanoseconds: time on a CPU, not time waiting
// for one), so the machine's load moves it far less than wall time. Median over the rounds.
//   [PERF_SERVER=…] npx tsx bench/src/probe/enqueue-pgcpu.ts [rounds] [batch]
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { PolicyCache } from "@porter/core";
import { chunkArrays, INSERT_SQL_FOR_PROBES } from "@porter/core/sql/enqueue-insert";
import { prepareEnqueue } from "@porter/core/sql/enqueue-prepare";
import { migrate } from "@porter/db/migrator";
import pg from "pg";

const [rounds, batch] = [Number(process.argv[2] ?? 20), Number(process.argv[3] ?? 1000)];
const SERVER = process.env.PERF_SERVER ?? "postgres://postgres@127.0.0.1:5432";

type Variant = { name: string; schema?: string; sql?: string };
/** Variants under test: edit freely (the baseline is the statement core sends). */
const VARIANTS: Variant[] = (process.env.ONLY ? (v: Variant[]) => v.filter((x) => x.name === process.env.ONLY) : (v: Variant[]) => v)([
  { name: "base" },
  { name: "no-stream-trigger", schema: "DROP TRIGGER jobs_stream_insert ON jobs" },
  { name: "no-aging-idx", schema: "DROP INDEX jobs_aging_idx" },
]);

const cpuNs = (pid: number): number => Number(readFileSync(`/proc/${pid}/schedstat`, "utf8").split(" ")[0]);

const open = async (v: Variant) => {
  const db = `porter_pgcpu_${v.name.replace(/[^a-z0-9]/g, "_")}`;
  const admin = new pg.Client(`${SERVER}/postgres`);
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`);
  await admin.query(`CREATE DATABASE ${db}`);
  await admin.end();
  await migrate(`${SERVER}/${db}`);
  const client = new pg.Client(`${SERVER}/${db}`);
  await client.connect();
  await client.query(`INSERT INTO pools (id, worker_concurrency) VALUES ('bench', 10)`);
  await client.query(`INSERT INTO queues (id, pool_id, default_max_attempts, max_attempts) VALUES ('bench', 'bench', 25, 25)`);
  await client.query(`INSERT INTO job_types (id, queue_id) VALUES ('bench.job', 'bench')`);
  await client.query(`INSERT INTO tenants (id) VALUES ('bench')`);
  if (v.schema) await client.query(v.schema);
  const { rows } = await client.query<{ pid: number }>(`SELECT pg_backend_pid() AS pid`);
  return { v, db, client, pid: rows[0]!.pid, ns: [] as number[] };
};
const runs = [];
for (const v of VARIANTS) runs.push(await open(v));

const policyCache = new PolicyCache({ ttlMs: 600_000 });
let k = 0;
const call = async (r: (typeof runs)[number], isMeasured: boolean) => {
  const now = new Date();
  const inputs = Array.from({ length: batch }, () => ({ job_type: "bench.job", tenant_id: "bench", payload: { k: ++k }, idempotency_key: `k-${k}` }));
  const prepared = await prepareEnqueue(r.client, inputs, { now, policyCache });
  const chunks: string[][] = [];
  for (let i = 0; i < prepared.length; i += 250) {
    chunks.push(
      chunkArrays(
        prepared.slice(i, i + 250),
        prepared.map((_, j) => j),
        now,
      ),
    );
  }
  const t0 = cpuNs(r.pid);
  await r.client.query("BEGIN");
  for (const c of chunks) await r.client.query({ name: "ins", text: r.v.sql ?? INSERT_SQL_FOR_PROBES, values: [...c, now, []] });
  await r.client.query("COMMIT");
  if (isMeasured) r.ns.push(cpuNs(r.pid) - t0);
};
for (let w = 0; w < 3; w++) for (const r of runs) await call(r, false);
// Instructions and cycles of each backend over its measured calls (`perf stat -p`): instruction
// counts do not depend on the machine's load at all, cycles little.
const counted = async (r: (typeof runs)[number], n: number) => {
  const perf = spawn("perf", ["stat", "-x", ",", "-e", "instructions,cycles", "-p", String(r.pid)], { stdio: ["ignore", "ignore", "pipe"] });
  let out = "";
  perf.stderr.on("data", (d) => (out += d));
  await new Promise((res) => setTimeout(res, 300));
  for (let i = 0; i < n; i++) await call(r, true);
  const done = new Promise((res) => perf.on("close", res));
  perf.kill("SIGINT");
  await done;
  const value = (event: string) =>
    Number(
      out
        .split("\n")
        .find((l) => l.includes(event))
        ?.split(",")[0] ?? Number.NaN,
    );
  return { instructions: value("instructions"), cycles: value("cycles") };
};
const counts = new Map(runs.map((r) => [r, [] as Array<{ instructions: number; cycles: number }>]));
for (let i = 0; i < rounds; i++) for (const r of i % 2 ? [...runs].reverse() : runs) counts.get(r)!.push(await counted(r, 5));
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const per = (r: (typeof runs)[number], f: "instructions" | "cycles") => median(counts.get(r)!.map((c) => c[f])) / 5;
const base = runs[0]!;
for (const r of runs) {
  const m = median(r.ns);
  console.log(
    `${r.v.name.padEnd(24)} per ${batch} jobs: instructions ${(per(r, "instructions") / 1e6).toFixed(1)} M (×${(per(r, "instructions") / per(base, "instructions")).toFixed(3)}), `
      + `cycles ${(per(r, "cycles") / 1e6).toFixed(1)} M (×${(per(r, "cycles") / per(base, "cycles")).toFixed(3)}), CPU median ${(m / 1e6).toFixed(2)} ms (×${(m / median(base.ns)).toFixed(3)})`,
  );
  await r.client.end();
}
