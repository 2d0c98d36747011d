// Probe (not part of the suite): claim latency at depth, scenario (f)'s shape without a worker
// process. A fresh `porter_perf`; ready rows generated as the bench generates them (cloneRows of a
// stored job: same priority and vft, ids in order), VACUUM ANALYZE, then a window of claim+ack
// cycles of `batch` on one connection, each claim timed; then more rows up to the large depth and
// the same again. With EXPLAIN=1, auto_explain logs the claim's nested statements (ANALYZE,
// BUFFERS) of the 3rd claim of each phase into the server's log; SETUP_SQL runs once before the
// generation (a variant's routine or schema, for an A/B).
//   PERF_SERVER=postgres://postgres@127.0.0.1:5533 npx tsx bench/src/probe/depth-probe.ts [small] [large] [window] [batch]
import { claimJobs, completeJobs, enqueueJobs } from "@porter/core";
import { cloneRows, uuidOf } from "../systems/clone-rows";
import { freshPerfDatabase } from "./perf-db";

const arg = (i: number, fallback: number): number => Number(process.argv[i] ?? fallback);
const [small, large, window, batch] = [arg(2, 10_000), arg(3, 1_000_000), arg(4, 20_000), arg(5, 100)];
const pool = await freshPerfDatabase({ connections: 2 });
if (process.env.SETUP_SQL) await pool.query(process.env.SETUP_SQL);
await enqueueJobs(pool, [{ job_type: "bench.job", tenant_id: "bench", payload: { k: 0 }, idempotency_key: "template" }], { notify: false });
await pool.query(`CREATE TABLE probe_template AS SELECT * FROM jobs WHERE idempotency_key = 'template'`);
await pool.query(`DELETE FROM jobs WHERE idempotency_key = 'template'`);
// IDLE_TENANT=1: a second tenant that once had work in the queue (its fair_clocks row stays) and
// has none now, as in any multi-tenant pool.
if (process.env.IDLE_TENANT === "1") {
  await pool.query(`INSERT INTO tenants (id) VALUES ('idle')`);
  await pool.query(`INSERT INTO fair_clocks (queue_id, tenant_id, last_vft) VALUES ('bench', 'idle', 0)`);
}
const gen = async (from: number, count: number) => {
  const at = `now() - interval '3 hours' + g * interval '1 millisecond'`;
  await cloneRows(pool, {
    table: "jobs",
    template: `SELECT * FROM probe_template`,
    overrides: { job_id: uuidOf("g", "a0000000"), payload: `jsonb_build_object('k', g)`, idempotency_key: `'gen-' || g`, run_at: at, created_at: at },
    from,
    count,
  });
  await pool.query(`VACUUM ANALYZE`);
};
const client = await pool.connect();
// ASYNC=1: the claims commit without waiting for their WAL flush, so that the timings are the
// statement's own (what grows with depth), not the disk's.
if (process.env.ASYNC === "1") await client.query(`SET synchronous_commit = off`);
const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;
// Reads of jobs by the window's statements (claims and acks), from the cumulative statistics.
const reads = async () => {
  await client.query(`SELECT pg_stat_force_next_flush()`);
  await client.query(`COMMIT`).catch(() => undefined);
  const { rows } = await pool.query<{ seq: string; tup: string; blks: string }>(
    `SELECT s.seq_scan AS seq, s.seq_tup_read AS tup, io.heap_blks_hit + io.heap_blks_read + coalesce(io.idx_blks_hit + io.idx_blks_read, 0) AS blks
       FROM pg_stat_user_tables s JOIN pg_statio_user_tables io USING (relid) WHERE s.relname = 'jobs'`,
  );
  return rows[0]!;
};
const drain = async (label: string) => {
  const times: number[] = [];
  const r0 = await reads();
  for (let n = 0, i = 0; n < window; i++) {
    const isExplained = process.env.EXPLAIN === "1" && i === 2;
    if (isExplained) {
      await client.query(`LOAD 'auto_explain'`);
      await client.query(
        `SET auto_explain.log_min_duration = 0; SET auto_explain.log_analyze = on; SET auto_explain.log_buffers = on; SET auto_explain.log_nested_statements = on`,
      );
    }
    const t0 = performance.now();
    const got = await claimJobs(client, { poolId: "bench", workerId: "depth-probe", limit: Math.min(batch, window - n) });
    const t = performance.now() - t0;
    if (isExplained) await client.query(`SET auto_explain.log_min_duration = -1`);
    if (got.length === 0) throw new Error(`${label}: nothing to claim after ${n}`);
    if (i >= 2) times.push(t);
    await completeJobs(
      client,
      got.map((j) => ({ id: j.id, leaseToken: j.leaseToken, attempt: j.attempt, result: null })),
    );
    n += got.length;
  }
  await new Promise((r) => setTimeout(r, 100));
  const r1 = await reads();
  const per = (a: string, b: string) => ((Number(b) - Number(a)) / (times.length + 2)).toFixed(1);
  const line = `${label}: ${times.length} claims of ${batch}: p50 ${pct(times, 50).toFixed(2)} p99 ${pct(times, 99).toFixed(2)} max ${Math.max(...times).toFixed(2)} ms; per claim+ack: jobs seq scans ${per(r0.seq, r1.seq)}, tuples seq-read ${per(r0.tup, r1.tup)}, buffers of jobs and its indexes ${per(r0.blks, r1.blks)}`;
  console.log(line);
  return pct(times, 99);
};
await gen(1, small + window);
const p99s = await drain(`${small} ready`);
await gen(small + window + 1, large - small);
const p99l = await drain(`${large} ready`);
console.log(`p99 ${large} ÷ ${small}: ${(p99l / p99s).toFixed(2)}`);
client.release();
await pool.end();
