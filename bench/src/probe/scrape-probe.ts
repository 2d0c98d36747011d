// The cost of the rollup-backed metrics' reads (docs/observability.md "Counters"): a fresh
// `porter_prom_scrape` database with Q queues × T job types × N tenants, every group written by S
// shards in each of the M minutes the totals have not absorbed yet (the worst case: ~5 late
// minutes + one maintenance pass), an hour of absorbed history behind them; then readFlowCounters
// and readSignals timed over R rounds.
// `npx tsx bench/src/probe/scrape-probe.ts [queues=10] [types=5] [tenants=50] [shards=4] [minutes=6] [rounds=20]`
import { readFlowCounters, readSignals } from "@porter/core";
import { absorbFlowTotals } from "@porter/core/sql/flow-totals";
import { migrate } from "@porter/db/migrator";
import { createPool } from "@porter/db/pool";
import pg from "pg";

const URL = "postgres://postgres@127.0.0.1:5432/porter_prom_scrape";
const arg = (i: number, fallback: number) => Number(process.argv[2 + i] ?? fallback);
const [Q, T, N, S, M, R] = [arg(0, 10), arg(1, 5), arg(2, 50), arg(3, 4), arg(4, 6), arg(5, 20)] as const;

const admin = new pg.Client("postgres://postgres@127.0.0.1:5432/postgres");
await admin.connect();
await admin.query("DROP DATABASE IF EXISTS porter_prom_scrape WITH (FORCE)");
await admin.query("CREATE DATABASE porter_prom_scrape");
await admin.end();
await migrate(URL);
const pool = createPool(URL, { max: 4 });
await pool.query("INSERT INTO pools (id, worker_concurrency) VALUES ('p', 10)");
await pool.query("INSERT INTO queues (id, pool_id) SELECT 'q' || q, 'p' FROM generate_series(1, $1) q", [Q]);
await pool.query("INSERT INTO job_types (id, queue_id) SELECT 'q' || q || '.t' || t, 'q' || q FROM generate_series(1, $1) q, generate_series(1, $2) t", [Q, T]);
await pool.query("INSERT INTO tenants (id) SELECT 't' || n FROM generate_series(1, $1) n", [N]);
const now = new Date(Math.floor(Date.now() / 60_000) * 60_000);
// Minutes: an hour of history (absorbed below) and the last M (not absorbed).
const fill = async (fromMin: number, toMin: number) => {
  const args = [now, fromMin, toMin, Q, T, N, S];
  const groups = `FROM generate_series($2::int, $3::int) m, generate_series(1, $4::int) q, generate_series(1, $5::int) t, generate_series(1, $6::int) n, generate_series(0, $7::int - 1) s`;
  const key = `$1::timestamptz - m * interval '1 minute', 'q' || q, 'q' || q || '.t' || t, 't' || n, s`;
  await pool.query(
    `INSERT INTO flow_rollups (grain, at, queue_id, job_type, tenant_id, shard, arrivals, starts, succeeded, retried, dead, runs, wait_ms_sum, run_ms_sum)
     SELECT 1, ${key}, 20, 20, 18, 2, 1, 20, 20 * random() * 1000, 20 * random() * 300 ${groups}`,
    args,
  );
  await pool.query(
    `INSERT INTO flow_histograms (grain, at, queue_id, job_type, tenant_id, shard, kind, bucket, n)
     SELECT 1, ${key}, k, b, 5 ${groups}, unnest(ARRAY['w', 'r']) k, generate_series(6, 9) b`,
    args,
  );
  await pool.query(`INSERT INTO flow_retry_codes (grain, at, queue_id, job_type, tenant_id, shard, code, n) SELECT 1, ${key}, 'TIMEOUT', 2 ${groups}`, args);
};
await fill(M, 60 + M - 1);
await absorbFlowTotals(pool, { now: new Date(now.getTime() - (M - 5) * 60_000) });
await fill(0, M - 1);
await pool.query("VACUUM ANALYZE flow_rollups, flow_histograms, flow_retry_codes, flow_totals, flow_histogram_totals, flow_retry_code_totals");
const { rows } = await pool.query<{ r: string; h: string }>(
  "SELECT (SELECT count(*) FROM flow_rollups WHERE grain = 1 AND at >= (SELECT absorbed_to FROM flow_totals_mark))::text AS r, (SELECT count(*) FROM flow_histograms WHERE grain = 1 AND at >= (SELECT absorbed_to FROM flow_totals_mark))::text AS h",
);

const time = async (read: () => Promise<unknown>) => {
  await read();
  const ms: number[] = [];
  for (let i = 0; i < R; i++) {
    const t = performance.now();
    await read();
    ms.push(performance.now() - t);
  }
  ms.sort((a, b) => a - b);
  return { p50: ms[Math.floor(R / 2)]!.toFixed(1), max: ms.at(-1)!.toFixed(1) };
};
const counters = await time(() => readFlowCounters(pool));
const signals = await time(() => readSignals(pool));
console.log(
  JSON.stringify({
    groups: Q * T * N,
    shards: S,
    unabsorbedMinutes: M,
    unabsorbedRollupRows: Number(rows[0]!.r),
    unabsorbedHistogramRows: Number(rows[0]!.h),
    readFlowCountersMs: counters,
    readSignalsMs: signals,
  }),
);
await pool.end();
