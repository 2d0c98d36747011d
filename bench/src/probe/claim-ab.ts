// Probe (not part of the suite): A/B of porter_claim variants. Each run: a fresh database cloned
// from a migrated template, one variant's routine file applied over it, N ready jobs, an
// in-process PorterWorker burn-down (as split.ts). Variants alternate, order rotated per round.
//   npx tsx bench/src/probe/claim-ab.ts <jobs> <rounds> A=file.sql B=file.sql …
// A variant spec may end in `%pre.sql` (SQL applied to its template before the backlog: see below).
// A variant spec may end in `@policy`: that variant's pool also holds a capped queue (cap 4, empty:
// every claim takes the limited path) and its jobs are spread over tenants A/B/C weighted 1/1/2 —
// the policy path of burn-down (c); `@tenants`: the three tenants without the capped queue. Without
// either: one uncapped queue, one tenant.
// LIMITED=1: the queue gets a concurrency cap far above the worker's slots (the limited path,
// never cut). Reports jobs/s, this database's backend CPU per job, and the claim call's time
// per row at the driver (ratios to the first variant at the end).
// AB_STRIP_FLOW=name[,name]: in those variants the statements of core (enqueue, ack, fail) run
// without their flow-rollup CTEs (sql/flow-write.ts), rewritten here at the driver; give them a
// claim routine without its flow CTEs too, for the burn-down without rollups (issue 14).
import { readFileSync } from "node:fs";
import { migrate } from "@porter/db/migrator";
import { createPool } from "@porter/db/pool";
import pg from "pg";
import { enqueueBenchBacklog } from "./bench-backlog";
import { startNoOpWorker } from "./no-op-worker";

const DB = process.env.AB_DB ?? "porter_perf_claim";
const ADMIN = "postgres://postgres@127.0.0.1:5432/postgres";
const URL = `postgres://postgres@127.0.0.1:5432/${DB}`;
const jobs = Number(process.argv[2] ?? 50_000);
const rounds = Number(process.argv[3] ?? 3);
const variants = process.argv.slice(4).map((a) => {
  const [name, spec] = a.split("=");
  const [routineSpec, pre] = spec!.split("%");
  const [file, mix] = routineSpec!.split("@");
  return { name: name!, sql: readFileSync(file!, "utf8"), mix: mix ?? "", pre: pre ?? "" };
});
const concurrency = 24;
const stripFlowFor = new Set((process.env.AB_STRIP_FLOW ?? "").split(",").filter(Boolean));
// AB_STRIP_HIST=name[,name]: only the histogram CTEs (INSERT INTO flow_histograms) are taken out.
const stripHistFor = new Set((process.env.AB_STRIP_HIST ?? "").split(",").filter(Boolean));
let current = "";
// A flow CTE: `, flow… AS (INSERT INTO flow_… ON CONFLICT (…) DO UPDATE SET x = flow_….x + EXCLUDED.x, …)`.
const FLOW_CTE = /,\s*flow\w* AS \(INSERT INTO flow_\w+[\s\S]*?DO UPDATE SET (?:\w+ = flow_\w+\.\w+ \+ EXCLUDED\.\w+(?:, )?)+\s*\)/g;
const limited = process.env.LIMITED === "1";

// Claim time at the driver: every porter_claim statement, dispatch to result.
let claimMs = 0;
let claimRows = 0;
let claims = 0;
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
  if (!text?.includes("porter_claim(")) return original.apply(this, args);
  const t0 = performance.now();
  const record = (r: { rowCount?: number } | undefined) => {
    claimMs += performance.now() - t0;
    claimRows += r?.rowCount ?? 0;
    claims += 1;
  };
  const last = args[args.length - 1];
  if (typeof last === "function") {
    args[args.length - 1] = (err: unknown, r: { rowCount?: number }) => {
      if (!err) record(r);
      (last as (e: unknown, r: unknown) => void)(err, r);
    };
    return original.apply(this, args);
  }
  const out = original.apply(this, args);
  if (out instanceof Promise) out.then(record, () => {});
  return out;
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

const ticksOf = (pids: number[]) => {
  let sum = 0;
  for (const pid of pids) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      sum += Number(f[11]) + Number(f[12]);
    } catch {}
  }
  return sum;
};

// A template per (mix, pre): `pre` is a SQL file applied to the template before its backlog is
// enqueued (e.g. an index's fillfactor, which only shapes the leaves written after it).
const templates = [...new Map(variants.map((v) => [`${v.mix}%${v.pre}`, v])).values()];
const tplOf = (v: { mix: string; pre: string }) => `${DB}_tpl${templates.findIndex((t) => t.mix === v.mix && t.pre === v.pre)}`;
await admin(`DROP DATABASE IF EXISTS ${DB} WITH (FORCE)`);
for (const t of templates) {
  const { mix } = t;
  const TPL = tplOf(t);
  await admin(`DROP DATABASE IF EXISTS ${TPL} WITH (FORCE)`);
  await admin(`CREATE DATABASE ${TPL}`);
  await migrate(`postgres://postgres@127.0.0.1:5432/${TPL}`);
  const c = new pg.Client(`postgres://postgres@127.0.0.1:5432/${TPL}`);
  await c.connect();
  if (t.pre) await c.query(readFileSync(t.pre, "utf8"));
  await c.query(`INSERT INTO pools (id, worker_concurrency) VALUES ('bench', $1)`, [concurrency]);
  await c.query(`INSERT INTO queues (id, pool_id) VALUES ('bench', 'bench')`);
  if (limited) await c.query(`UPDATE queues SET concurrency_cap = 100000`);
  if (mix === "policy") await c.query(`INSERT INTO queues (id, pool_id, concurrency_cap) VALUES ('capped', 'bench', 4)`);
  await c.query(`INSERT INTO job_types (id, queue_id) VALUES ('bench.job', 'bench')`);
  await c.query(`INSERT INTO tenants (id) VALUES ('bench')`);
  if (mix) await c.query(`INSERT INTO tenants (id, weight) VALUES ('tenant_A', 1), ('tenant_B', 1), ('tenant_C', 2)`);
  await c.end();
  // The backlog, enqueued once by core (what producers run), cloned by every run.
  const seed = createPool(`postgres://postgres@127.0.0.1:5432/${TPL}`, { max: 2 });
  await enqueueBenchBacklog(seed, jobs, mix ? ["tenant_A", "tenant_B", "tenant_C"] : ["bench"]);
  await seed.end();
}

type Result = { rate: number; pgUs: number; claimUs: number; perClaim: number };
const results = new Map<string, Result[]>(variants.map((v) => [v.name, []]));

const runOne = async (v: { name: string; sql: string; mix: string; pre: string }): Promise<Result> => {
  await admin(`DROP DATABASE IF EXISTS ${DB} WITH (FORCE)`);
  await admin(`CREATE DATABASE ${DB} TEMPLATE ${tplOf(v)}`);
  const pool = createPool(URL, { max: concurrency + 2 });
  await pool.query(v.sql);
  current = v.name;
  claimMs = 0;
  claimRows = 0;
  claims = 0;
  let ran = 0;
  const t0 = performance.now();
  let pids: number[] = [];
  let ticks0 = 0;
  const worker = await startNoOpWorker({
    db: pool,
    connectionString: URL,
    concurrency,
    onRun: () => {
      ran += 1;
    },
  });
  // Backends of this database (the pool opens its connections as the worker starts).
  const side = new pg.Client(ADMIN);
  await side.connect();
  const snap = async () => (await side.query<{ pid: number }>(`SELECT pid FROM pg_stat_activity WHERE datname = $1`, [DB])).rows.map((r) => r.pid);
  pids = await snap();
  ticks0 = ticksOf(pids);
  const seen = new Set(pids);
  while (ran < jobs) {
    await new Promise((r) => setTimeout(r, 20));
    for (const p of await snap())
      if (!seen.has(p)) {
        seen.add(p);
        pids.push(p);
      }
  }
  const s = (performance.now() - t0) / 1000;
  const pgS = (ticksOf(pids) - ticks0) / 100;
  await worker.drain({ graceMs: 100 });
  await side.end();
  const left = (await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM jobs`)).rows[0]!.n;
  if (left !== 0) throw new Error(`${left} jobs left`);
  const done = (await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM finished_jobs`)).rows[0]!.n;
  if (done !== jobs) throw new Error(`${done} finished of ${jobs}`);
  await pool.end();
  return { rate: jobs / s, pgUs: (pgS / jobs) * 1e6, claimUs: (claimMs / claimRows) * 1000, perClaim: claimRows / claims };
};

for (let r = 0; r < rounds; r++) {
  const order = variants.map((_, i) => variants[(i + r) % variants.length]!);
  for (const v of order) {
    const res = await runOne(v);
    results.get(v.name)!.push(res);
    console.log(
      `round ${r + 1} ${v.name}: ${res.rate.toFixed(0)} jobs/s, pg ${res.pgUs.toFixed(1)} µs/job, claim ${res.claimUs.toFixed(2)} µs/row, ${res.perClaim.toFixed(0)} rows/claim`,
    );
  }
}
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
const base = results.get(variants[0]!.name)!;
for (const v of variants) {
  const rs = results.get(v.name)!;
  const m = (k: keyof Result) => median(rs.map((x) => x[k]));
  const b = (k: keyof Result) => median(base.map((x) => x[k]));
  console.log(
    `${v.name}${limited ? " (limited)" : ""}: median ${m("rate").toFixed(0)} jobs/s (${(m("rate") / b("rate")).toFixed(3)}×), `
      + `pg ${m("pgUs").toFixed(1)} µs/job (${(m("pgUs") / b("pgUs")).toFixed(3)}×), claim ${m("claimUs").toFixed(2)} µs/row (${(m("claimUs") / b("claimUs")).toFixed(3)}×); `
      + `runs ${rs.map((x) => x.rate.toFixed(0)).join(" ")}`,
  );
}
await admin(`DROP DATABASE IF EXISTS ${DB} WITH (FORCE)`);
// AB_KEEP_TPL=1: the templates stay (for psql timings of single claims against the same backlogs).
if (process.env.AB_KEEP_TPL !== "1") {
  for (const t of templates) await admin(`DROP DATABASE IF EXISTS ${tplOf(t)} WITH (FORCE)`);
}
