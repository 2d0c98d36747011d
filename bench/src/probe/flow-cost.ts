// Probe (not part of the suite): the flow rollups' PostgreSQL CPU per job, claim and ack apart,
// without the worker's noise. Each run: a fresh database cloned from a migrated template holding
// N ready jobs; one connection claims batches of CLAIM rows (porter_claim), another acks them in
// batches of ACK rows (completeJobs, as the completer does), sequentially; the backend CPU of each
// connection per job is read from /proc. Variants alternate as in claim-ab.ts:
//   npx tsx bench/src/probe/flow-cost.ts <jobs> <rounds> A=claim-routine.sql B=…
// AB_STRIP_FLOW=name[,name]: those variants' ack runs without its flow CTEs (give them a claim
// routine without its flow CTE too); AB_STRIP_HIST=name: only the histogram CTEs. CLAIM (default 400) and ACK (default 40) set the batch sizes.
import { readFileSync } from "node:fs";
import { claimJobs, completeJobs } from "@porter/core";
import { migrate } from "@porter/db/migrator";
import { createPool } from "@porter/db/pool";
import pg from "pg";
import { enqueueBenchBacklog } from "./bench-backlog";

const DB = process.env.AB_DB ?? "porter_perf_flowcost";
const ADMIN = "postgres://postgres@127.0.0.1:5432/postgres";
const URL = `postgres://postgres@127.0.0.1:5432/${DB}`;
const jobs = Number(process.argv[2] ?? 20_000);
const rounds = Number(process.argv[3] ?? 3);
const claimBatch = Number(process.env.CLAIM ?? 400);
const ackBatch = Number(process.env.ACK ?? 40);
const variants = process.argv.slice(4).map((a) => {
  const [name, file] = a.split("=");
  return { name: name!, sql: readFileSync(file!, "utf8") };
});
const stripFlowFor = new Set((process.env.AB_STRIP_FLOW ?? "").split(",").filter(Boolean));
// AB_STRIP_HIST=name[,name]: only the histogram CTEs (INSERT INTO flow_histograms) are taken out.
const stripHistFor = new Set((process.env.AB_STRIP_HIST ?? "").split(",").filter(Boolean));
const FLOW_CTE = /,\s*flow\w* AS \(INSERT INTO flow_\w+[\s\S]*?DO UPDATE SET (?:\w+ = flow_\w+\.\w+ \+ EXCLUDED\.\w+(?:, )?)+\s*\)/g;
let current = "";
const original = pg.Client.prototype.query as unknown as (...a: unknown[]) => unknown;
(pg.Client.prototype as unknown as { query: unknown }).query = function (this: pg.Client, ...args: unknown[]) {
  const first = args[0] as { text?: string } | string;
  const text = typeof first === "string" ? first : first?.text;
  if (stripFlowFor.has(current) && typeof first === "object" && text?.includes("INSERT INTO flow_")) {
    args[0] = { ...first, text: text.replace(FLOW_CTE, "") };
    if ((args[0] as { text: string }).text.includes("flow_")) throw new Error(`flow CTE left in: ${text}`);
  } else if (stripHistFor.has(current) && typeof first === "object" && text?.includes("INSERT INTO flow_histograms")) {
    args[0] = { ...first, text: text.replace(FLOW_CTE, (cte) => (cte.includes("INSERT INTO flow_histograms") ? "" : cte)) };
    if ((args[0] as { text: string }).text.includes("flow_histograms")) throw new Error(`histogram CTE left in: ${text}`);
  }
  return original.apply(this, args);
};

const admin = async (sql: string) => {
  const c = new pg.Client(ADMIN);
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
};
const ticksOf = (pid: number) => {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return Number(f[11]) + Number(f[12]);
};

const TPL = `${DB}_tpl`;
await admin(`DROP DATABASE IF EXISTS ${DB} WITH (FORCE)`);
await admin(`DROP DATABASE IF EXISTS ${TPL} WITH (FORCE)`);
await admin(`CREATE DATABASE ${TPL}`);
await migrate(`postgres://postgres@127.0.0.1:5432/${TPL}`);
{
  const seed = createPool(`postgres://postgres@127.0.0.1:5432/${TPL}`, { max: 2 });
  await seed.query(`INSERT INTO pools (id, worker_concurrency) VALUES ('bench', 24)`);
  await seed.query(`INSERT INTO queues (id, pool_id) VALUES ('bench', 'bench')`);
  await seed.query(`INSERT INTO job_types (id, queue_id) VALUES ('bench.job', 'bench')`);
  await seed.query(`INSERT INTO tenants (id) VALUES ('bench')`);
  await enqueueBenchBacklog(seed, jobs);
  await seed.end();
}

type Result = { claimUs: number; ackUs: number; rate: number };
const results = new Map<string, Result[]>(variants.map((v) => [v.name, []]));

const runOne = async (v: { name: string; sql: string }): Promise<Result> => {
  await admin(`DROP DATABASE IF EXISTS ${DB} WITH (FORCE)`);
  await admin(`CREATE DATABASE ${DB} TEMPLATE ${TPL}`);
  current = v.name;
  const claimer = new pg.Client(URL);
  const acker = new pg.Client(URL);
  await claimer.connect();
  await acker.connect();
  await claimer.query(v.sql);
  const pidOf = async (c: pg.Client) => (await c.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")).rows[0]!.pid;
  const [cp, ap] = [await pidOf(claimer), await pidOf(acker)];
  const [c0, a0] = [ticksOf(cp), ticksOf(ap)];
  const t0 = performance.now();
  let done = 0;
  while (done < jobs) {
    const claimed = await claimJobs(claimer as unknown as pg.Pool, { poolId: "bench", workerId: "w1", limit: claimBatch });
    if (claimed.length === 0) throw new Error(`nothing claimable after ${done}`);
    for (let i = 0; i < claimed.length; i += ackBatch) {
      const out = await completeJobs(
        acker as unknown as pg.Pool,
        claimed.slice(i, i + ackBatch).map((j) => ({ id: j.id, leaseToken: j.leaseToken, attempt: j.attempt, result: null })),
      );
      done += out.completed.length;
    }
  }
  const s = (performance.now() - t0) / 1000;
  const res = { claimUs: ((ticksOf(cp) - c0) / 100 / jobs) * 1e6, ackUs: ((ticksOf(ap) - a0) / 100 / jobs) * 1e6, rate: jobs / s };
  if (process.env.PLANS === "1") console.log((await acker.query("SELECT name, generic_plans, custom_plans FROM pg_prepared_statements")).rows);
  await claimer.end();
  await acker.end();
  return res;
};

for (let r = 0; r < rounds; r++) {
  const order = variants.map((_, i) => variants[(i + r) % variants.length]!);
  for (const v of order) {
    const res = await runOne(v);
    results.get(v.name)!.push(res);
    console.log(
      `round ${r + 1} ${v.name}: claim ${res.claimUs.toFixed(1)} µs/job, ack ${res.ackUs.toFixed(1)} µs/job, total ${(res.claimUs + res.ackUs).toFixed(1)}, ${res.rate.toFixed(0)} jobs/s`,
    );
  }
}
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
for (const v of variants) {
  const rs = results.get(v.name)!;
  const m = (f: (x: Result) => number) => median(rs.map(f)).toFixed(1);
  console.log(
    `${v.name}: median claim ${m((x) => x.claimUs)} µs/job, ack ${m((x) => x.ackUs)}, total ${m((x) => x.claimUs + x.ackUs)}, ${m((x) => x.rate)} jobs/s`,
  );
}
await admin(`DROP DATABASE IF EXISTS ${DB} WITH (FORCE)`);
await admin(`DROP DATABASE IF EXISTS ${TPL} WITH (FORCE)`);
