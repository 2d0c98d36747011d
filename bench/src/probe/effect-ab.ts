// Probe (not part of the suite): ctx.effect against a plain write, as bench (g) applies them but
// without its failures (whose retry delay dilutes the difference). Each run: a fresh database
// cloned from a migrated template holding N ready jobs, an in-process PorterWorker (24 slots, 26
// connections, adaptive prefetch) whose handler applies one effect per job — `plain`: one
// INSERT … ON CONFLICT on the worker's pool (synchronous commit, like the ledger's); `ledger`: the
// same statement through ctx.effect (fn returns the statement's rowCount, stored in the ledger).
// Variants alternate, order rotated per round; the ratio of each round's pair is printed, with the
// deadlocks the database counted during the run.
//   npx tsx bench/src/probe/effect-ab.ts <jobs> <rounds>
// AB_FAIL_PERCENT=10: that share of the jobs fails its first attempt (as in bench (g)); prints when
// every first attempt had started and when the last effect applied (the retry tail between).
import { readFileSync } from "node:fs";
import { migrate } from "@porter/db/migrator";
import { createPool } from "@porter/db/pool";
import { defineHandler, RetryableError } from "@porter/sdk";
import { createHandlerMap } from "@porter/worker/handlers/handler-map";
import { createLogger } from "@porter/worker/logger";
import { PrefetchBuffer } from "@porter/worker/runtime/prefetch-buffer";
import { PorterWorker } from "@porter/worker/runtime/worker";
import pg from "pg";
import { EFFECTS_TABLE_SQL } from "../systems/types";
import { EFFECT_SQL } from "../worker/job-log";
import { enqueueBenchBacklog } from "./bench-backlog";

const DB = process.env.AB_DB ?? "porter_perf_effect";
const ADMIN = "postgres://postgres@127.0.0.1:5432/postgres";
const URL = `postgres://postgres@127.0.0.1:5432/${DB}`;
const jobs = Number(process.argv[2] ?? 3000);
const rounds = Number(process.argv[3] ?? 3);
const concurrency = 24;
type Variant = "plain" | "ledger" | "ledger-keyshare" | "txonly" | "mixed" | "ledger-alt" | "txonly-alt" | "stmt" | "stmt-alt";
// mixed: one run in which job k applies its write as plain, ledger, txonly by k % 3 — the same
// conditions for all three; prints each one's handler time (mean and median ms per job).
// txonly: ctx.effect with { txOnly: true } (the statement pipelined behind the claim).
// ledger-keyshare: the claim locks the job row FOR KEY SHARE to the end (the commit's fence unchanged).
const VARIANTS = (process.env.AB_VARIANTS ?? "plain,ledger").split(",") as Variant[];
const FAIL_PERCENT = Number(process.env.AB_FAIL_PERCENT ?? 0);
const CLAIM_WITH_KEY_SHARE = readFileSync(new globalThis.URL("../../../packages/core/src/sql/routines/effects.sql", import.meta.url), "utf8").replace(
  "AND j.state = 'RUNNING';",
  "AND j.state = 'RUNNING' FOR KEY SHARE;",
);

const admin = async (sql: string) => {
  const c = new pg.Client(ADMIN);
  await c.connect();
  try {
    return await c.query(sql);
  } finally {
    await c.end();
  }
};

const TPL = `${DB}_tpl`;
await admin(`DROP DATABASE IF EXISTS ${DB} WITH (FORCE)`);
await admin(`DROP DATABASE IF EXISTS ${TPL} WITH (FORCE)`);
await admin(`CREATE DATABASE ${TPL}`);
await migrate(`postgres://postgres@127.0.0.1:5432/${TPL}`);
{
  const c = new pg.Client(`postgres://postgres@127.0.0.1:5432/${TPL}`);
  await c.connect();
  await c.query(`INSERT INTO pools (id, worker_concurrency) VALUES ('bench', $1)`, [concurrency]);
  await c.query(`INSERT INTO queues (id, pool_id) VALUES ('bench', 'bench')`);
  await c.query(`INSERT INTO job_types (id, queue_id) VALUES ('bench.job', 'bench')`);
  await c.query(`INSERT INTO tenants (id) VALUES ('bench')`);
  await c.query(EFFECTS_TABLE_SQL);
  await c.end();
  const seed = createPool(`postgres://postgres@127.0.0.1:5432/${TPL}`, { max: 2 });
  await enqueueBenchBacklog(seed, jobs);
  await seed.end();
}

// AB_PROFILE=1: per run, the messages the process sent (each pg query is one round trip) per job,
// by statement kind; Node CPU and the database backends' CPU per job; time the completer spent
// waiting for start marks in flight (its beforeWrite).
const PROFILE = process.env.AB_PROFILE === "1";
const sent = new Map<string, number>();
let landedWaitMs = 0;
if (PROFILE) {
  const query = pg.Client.prototype.query as (...a: unknown[]) => unknown;
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    const c = args[0] as string | { text?: string } | undefined;
    const text = typeof c === "string" ? c : (c?.text ?? "");
    const kind = text.replace(/\s+/g, " ").trim().slice(0, 40);
    sent.set(kind, (sent.get(kind) ?? 0) + 1);
    return query.apply(this, args);
  } as typeof pg.Client.prototype.query;
  const landed = PrefetchBuffer.prototype.startsLanded;
  PrefetchBuffer.prototype.startsLanded = async function (this: PrefetchBuffer) {
    const t = performance.now();
    await landed.call(this);
    landedWaitMs += performance.now() - t;
  };
}
const backendCpuMs = async (): Promise<number> => {
  const { rows } = await admin(`SELECT pid FROM pg_stat_activity WHERE datname = '${DB}'`);
  let ticks = 0;
  for (const { pid } of rows as { pid: number }[]) {
    try {
      const f = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
      ticks += Number(f[11]) + Number(f[12]);
    } catch {}
  }
  return ticks * 10;
};

const deadlocks = async () => Number((await admin(`SELECT deadlocks FROM pg_stat_database WHERE datname = '${DB}'`)).rows[0]?.deadlocks ?? 0);

const runOne = async (variant: Variant): Promise<{ rate: number; deadlocks: number; applied: number }> => {
  await admin(`DROP DATABASE IF EXISTS ${DB} WITH (FORCE)`);
  await admin(`CREATE DATABASE ${DB} TEMPLATE ${TPL}`);
  const pool = createPool(URL, { max: Number(process.env.AB_POOL ?? concurrency + 2), applicationName: "effect-ab" });
  // *-alt: the same handler with the SQL file AB_ALT_SQL applied first (an alternative routine, A/B).
  if (variant.endsWith("-alt")) await pool.query(readFileSync(process.env.AB_ALT_SQL ?? "", "utf8"));
  if (variant === "ledger-keyshare") {
    if (!CLAIM_WITH_KEY_SHARE.includes("FOR KEY SHARE;")) throw new Error("the claim's lock was not put in");
    await pool.query(CLAIM_WITH_KEY_SHARE);
  }
  let ran = 0;
  let firstAttempts = 0;
  let firstDoneAt = 0;
  let handlerMs = 0;
  const handlerTimes = new Map<Variant, number[]>();
  let done: () => void = () => undefined;
  const all = new Promise<void>((resolve) => (done = resolve));
  const handler = defineHandler({
    type: "bench.job",
    run: async (job, ctx) => {
      const k = (job.payload as { k: number }).k;
      if (job.attempt === 1) {
        firstAttempts += 1;
        if (firstAttempts === jobs) firstDoneAt = performance.now();
      }
      // AB_FAIL_PERCENT: that share of the jobs fails its first attempt before its write, as in bench (g).
      if (job.attempt === 1 && k % 100 < FAIL_PERCENT) throw new RetryableError("injected", { code: "AB_TRANSIENT" });
      const h0 = performance.now();
      const as: Variant = variant === "mixed" ? (["plain", "ledger", "txonly", "stmt"] as const)[k % 4]! : (variant.replace(/-alt$/, "") as Variant);
      if (as === "plain") await pool.query(EFFECT_SQL, [k]);
      else if (as === "stmt") await ctx.effect(`effect-${k}`, { text: EFFECT_SQL, values: [k] });
      else if (as === "txonly") await ctx.effect(`effect-${k}`, async (tx) => (await tx.query(EFFECT_SQL, [k])).rowCount, { txOnly: true });
      else await ctx.effect(`effect-${k}`, async (tx) => (await tx.query(EFFECT_SQL, [k])).rowCount);
      const ms = performance.now() - h0;
      handlerMs += ms;
      handlerTimes.get(as)?.push(ms) ?? handlerTimes.set(as, [ms]);
      ran += 1;
      if (ran === jobs) done();
      return null;
    },
  });
  sent.clear();
  landedWaitMs = 0;
  const cpu0 = process.cpuUsage();
  // Samples what the run's active backends wait on, every 25 ms (a connection of its own).
  const waits = new Map<string, number>();
  let sampling = PROFILE;
  let samples = 0;
  let poolWaiting = 0;
  let poolIdle = 0;
  const sampler = (async () => {
    if (!PROFILE) return;
    const c = new pg.Client(ADMIN);
    await c.connect();
    while (sampling) {
      const { rows } = await c.query<{ w: string }>(
        `SELECT coalesce(wait_event_type || ':' || wait_event, 'CPU') || '  ' || left(regexp_replace(query, 's+', ' ', 'g'), 36) AS w
           FROM pg_stat_activity WHERE datname = '${DB}' AND state = 'active'`,
      );
      samples += 1;
      poolWaiting += pool.waitingCount;
      poolIdle += pool.idleCount;
      for (const { w } of rows) waits.set(w, (waits.get(w) ?? 0) + 1);
      await new Promise((r) => setTimeout(r, 25));
    }
    await c.end();
  })();
  const t0 = performance.now();
  const worker = await PorterWorker.start({
    db: pool,
    connectionString: URL,
    poolId: "bench",
    concurrency,
    logger: createLogger({ level: FAIL_PERCENT > 0 ? "error" : "warn" }), // injected failures log at warn
    handlers: createHandlerMap([handler]),
    maintenance: false,
  });
  await all;
  const seconds = (performance.now() - t0) / 1000;
  if (FAIL_PERCENT > 0)
    console.log(
      `  ${variant}: every first attempt started after ${((firstDoneAt - t0) / 1000).toFixed(2)} s, all ${jobs} applied after ${seconds.toFixed(2)} s`,
    );
  const cpu = process.cpuUsage(cpu0);
  sampling = false;
  await sampler;
  const pgCpu = PROFILE ? await backendCpuMs() : 0;
  await worker.drain({ graceMs: 2000 });
  if (variant === "mixed") {
    const mid = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    for (const [v, xs] of handlerTimes)
      console.log(
        `  mixed ${v}: handler ${(xs.reduce((a, b) => a + b, 0) / xs.length).toFixed(1)} ms mean, ${mid(xs).toFixed(1)} ms median (${xs.length} jobs)`,
      );
  }
  if (PROFILE) {
    const total = [...sent.values()].reduce((a, b) => a + b, 0);
    console.log(
      `  ${variant}: ${(total / jobs).toFixed(2)} messages/job; Node CPU ${((cpu.user + cpu.system) / 1000 / jobs).toFixed(3)} ms/job; backends' CPU ${(pgCpu / jobs).toFixed(3)} ms/job (incl. seeding); completer waited for start marks ${landedWaitMs.toFixed(0)} ms in all; handler ${(handlerMs / jobs).toFixed(1)} ms/job, slots busy ${(handlerMs / 1000 / seconds).toFixed(1)} of ${concurrency} on average`,
    );
    for (const [k, n] of [...sent].sort((a, b) => b[1] - a[1]).slice(0, 8)) console.log(`    ${(n / jobs).toFixed(3)}/job  ${k}`);
    console.log(`  pool: ${(poolWaiting / samples).toFixed(1)} checkouts waiting, ${(poolIdle / samples).toFixed(1)} connections idle, mean per sample`);
    console.log(`  active backends by wait, mean per sample (${samples} samples):`);
    for (const [k, n] of [...waits].sort((a, b) => b[1] - a[1]).slice(0, 12)) console.log(`    ${(n / samples).toFixed(2)}  ${k}`);
  }
  const { rows } = await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM bench_effects WHERE applied = 1`);
  await pool.end();
  // The backends' statistics are flushed as they exit.
  for (let i = 0; i < 50; i++) {
    const left = Number((await admin(`SELECT count(*) AS n FROM pg_stat_activity WHERE datname = '${DB}'`)).rows[0].n);
    if (left === 0) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  return { rate: jobs / seconds, deadlocks: await deadlocks(), applied: rows[0]!.n };
};

const rates = new Map<Variant, number[]>(VARIANTS.map((v) => [v, []]));
console.log(
  `load average ${(await import("node:os"))
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(" ")}`,
);
for (let round = 0; round < rounds; round++) {
  const order = VARIANTS.map((_, i) => VARIANTS[(i + round) % VARIANTS.length]!);
  const got = new Map<Variant, number>();
  for (const v of order) {
    const r = await runOne(v);
    got.set(v, r.rate);
    rates.get(v)!.push(r.rate);
    console.log(`round ${round + 1} ${v}: ${r.rate.toFixed(0)} jobs/s, ${r.applied}/${jobs} effects applied once, ${r.deadlocks} deadlocks`);
  }
  for (const v of VARIANTS.slice(1)) console.log(`round ${round + 1} ${v}/${VARIANTS[0]}: ${(got.get(v)! / got.get(VARIANTS[0]!)!).toFixed(3)}`);
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
for (const v of VARIANTS.slice(1)) console.log(`median ${v}/${VARIANTS[0]}: ${(median(rates.get(v)!) / median(rates.get(VARIANTS[0]!)!)).toFixed(3)}`);
await admin(`DROP DATABASE IF EXISTS ${DB} WITH (FORCE)`);
await admin(`DROP DATABASE IF EXISTS ${TPL} WITH (FORCE)`);
