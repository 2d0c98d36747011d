// Probe (not part of the suite): the round trip of a claim that takes one job — (e)'s claim — on one
// connection, against variants that price its parts. Per cycle: one job enqueued on another
// connection, then claimed (limit 24, as a worker of 24 free slots claims) and acked.
//   npx tsx bench/src/probe/claim-one.ts [cycles=400] [rounds=3]
// Variants (CLAIM_ONE_VARIANTS, comma-separated; alternating, order rotated per round):
//   claim  — porter_claim as the worker sends it;
//   async  — the same with the session's synchronous_commit off: the claim without its WAL flush;
//   empty  — a claim that finds nothing (read-only: no WAL, no flush);
//   update — the job row's claim alone, as one UPDATE … RETURNING with its pick (what a
//            single-statement fetch costs on this schema);
//   single — the statement in CLAIM_ONE_SINGLE=<file> ($1 pool, $2 worker, $3 limit, $4 start;
//            returning id, lease_token, attempt): a restructured claim to compare.
// CLAIM_ONE_GAP_MS=<ms>: an idle gap of about that long before each cycle, as (e) has between its
// jobs (the backend's caches go cold meanwhile; docs/performance.md "a cold claim's parts").
// CLAIM_ONE_SQL=<file>: SQL run on the fresh database first (a variant of the claim's routines, to
// price one of its parts). CLAIM_ONE_GENERIC=1: the claiming session plans generically.
import { readFileSync } from "node:fs";
import { claimBatch, completeJobs, enqueueJobs } from "@porter/core";
import pg from "pg";
import { freshPerfDatabase, PERF_URL } from "./perf-db";

const cycles = Number(process.argv[2] ?? 400);
const rounds = Number(process.argv[3] ?? 3);
const variants = (process.env.CLAIM_ONE_VARIANTS ?? "claim,async,empty,update").split(",");
const WORKER = "00000000-0000-0000-0000-000000000001";

const pool = await freshPerfDatabase({ connections: 2, workerConcurrency: 24, statements: true });
if (process.env.CLAIM_ONE_SQL) await pool.query(readFileSync(process.env.CLAIM_ONE_SQL, "utf8"));
const claimer = new pg.Client(PERF_URL);
await claimer.connect();
if (process.env.CLAIM_ONE_GENERIC) await claimer.query("SET plan_cache_mode = force_generic_plan");

const enqueue = async (k: number) => {
  const [r] = await enqueueJobs(pool, [{ job_type: "bench.job", tenant_id: "bench", payload: { k }, idempotency_key: `k${k}-${Math.random()}` }], {
    notify: false,
  });
  return r;
};

const UPDATE_SQL = `UPDATE jobs SET state = 'RUNNING', attempt = attempt + 1, claimed_at = now(), lease_owner = $1,
                  lease_token = nextval('lease_token_seq'), lease_until = now() + interval '30 s', started_at = now()
            WHERE id = (SELECT id FROM jobs WHERE state = 'READY' ORDER BY queue_id, tenant_id, priority DESC, vft, id
                         LIMIT 1 FOR UPDATE SKIP LOCKED)
        RETURNING id::text, lease_token::text, attempt`;
const SINGLE_SQL = process.env.CLAIM_ONE_SINGLE ? readFileSync(process.env.CLAIM_ONE_SINGLE, "utf8") : "";
let seq = 0;
const GAP_MS = Number(process.env.CLAIM_ONE_GAP_MS ?? 0);
const cycle = async (variant: string): Promise<number> => {
  if (GAP_MS > 0) await new Promise((r) => setTimeout(r, GAP_MS * (0.5 + Math.random())));
  if (variant === "empty") {
    const t = performance.now();
    await claimBatch(claimer, { poolId: "bench", workerId: WORKER, limit: 24 });
    return performance.now() - t;
  }
  await enqueue(seq++);
  if (variant === "update" || variant === "single") {
    const query =
      variant === "update"
        ? { name: "probe.update", text: UPDATE_SQL, values: [WORKER] }
        : { name: "probe.single", text: SINGLE_SQL, values: ["bench", WORKER, 24, 24] };
    const t = performance.now();
    const { rows } = await claimer.query<{ id: string; lease_token: string; attempt: number }>(query);
    const ms = performance.now() - t;
    const [r] = rows;
    if (!r || rows.length !== 1) throw new Error(`${variant} claimed ${rows.length}`);
    await completeJobs(pool, [{ id: r.id, leaseToken: r.lease_token, attempt: r.attempt, result: null }]);
    return ms;
  }
  if (variant === "async") await claimer.query("SET synchronous_commit = off");
  const t = performance.now();
  const { jobs } = await claimBatch(claimer, { poolId: "bench", workerId: WORKER, limit: 24 });
  const ms = performance.now() - t;
  if (variant === "async") await claimer.query("SET synchronous_commit = on");
  const [j] = jobs;
  if (!j || jobs.length !== 1) throw new Error(`claimed ${jobs.length}`);
  await completeJobs(pool, [{ id: j.id, leaseToken: j.leaseToken, attempt: j.attempt, result: null }]);
  return ms;
};

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? Number.NaN;
};
for (const v of variants) for (let i = 0; i < 30; i++) await cycle(v); // warm: plans cached
await pool.query("SELECT pg_stat_statements_reset()");
const all = new Map<string, number[]>(variants.map((v) => [v, []]));
for (let r = 0; r < rounds; r++) {
  const order = variants.map((_, i) => variants[(i + r) % variants.length] ?? "claim");
  for (const v of order) {
    const ms: number[] = [];
    for (let i = 0; i < cycles; i++) ms.push(await cycle(v));
    all.get(v)?.push(...ms);
    console.log(`round ${r + 1} ${v.padEnd(7)} p50 ${pct(ms, 50).toFixed(3)} p90 ${pct(ms, 90).toFixed(3)} ms`);
  }
}
for (const [v, ms] of all) console.log(`all     ${v.padEnd(7)} p50 ${pct(ms, 50).toFixed(3)} p90 ${pct(ms, 90).toFixed(3)} ms (${ms.length})`);
const { rows } = await pool.query(
  `SELECT calls, round(mean_exec_time::numeric, 3) AS ms, left(regexp_replace(query, '\\s+', ' ', 'g'), 90) AS q
     FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
    ORDER BY total_exec_time DESC LIMIT 24`,
);
for (const r of rows) console.log(`${String(r.calls).padStart(6)} ${String(r.ms).padStart(7)} ms  ${r.q}`);
await claimer.end();
await pool.end();
