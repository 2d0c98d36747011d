// The per-job costs the scaling model uses, measured phase by phase on a PostgreSQL cluster of its
// own (so WAL, commits and CPU are Porter's alone, not the shared server's other work):
//   npm run costs -w @porter/bench -- [--jobs 20000] [--rounds 3] [--checkpoint] [--claim-batch 400] [--ack-batch 500] [--json out.json]
// Each round: a fresh migrated database (cloned from a template), then
//   enqueue   `jobs` jobs through core's enqueueJobs on a pool in calls of 1000 (what enqueueBatch runs),
//   single    `jobs / 5` single-job calls from 32 concurrent callers (coalesced, what enqueue runs),
//   claim     porter_claim in batches of 400 (--claim-batch) until every job is RUNNING (the worker's batch claim),
//   heartbeat one lease extension per job, in batches of 1000 (a long job's heartbeat, per lease/3),
//   ack       completeJobs in batches of 500 (--ack-batch; the completer's flush) until every job is SUCCEEDED,
// and for each phase: WAL bytes (pg_current_wal_lsn delta, and pg_waldump --stats for the full-page
// images), commits (pg_stat_database), rows inserted/updated/deleted per table (pg_stat_user_tables),
// PostgreSQL CPU (every process of the cluster, from /proc), and bytes on the wire (the client
// socket; enqueue, claim, heartbeat and ack run on one client each).
import { execFile } from "node:child_process";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs, promisify } from "node:util";
import { claimJobs, completeJobs, type EnqueueInput, enqueueJobs, extendLeases, PolicyCache } from "@porter/core";
import { createPool } from "@porter/db/pool";
import { startRestartableCluster } from "@porter/db/testing/restartable-cluster";
import pg from "pg";
import { median } from "../table";
import type { PhaseCost, TableRows } from "./costs";

const run = promisify(execFile);
const { values } = parseArgs({
  options: {
    jobs: { type: "string", default: "20000" },
    rounds: { type: "string", default: "3" },
    json: { type: "string" },
    // CHECKPOINT before each phase: every page's first change is then a full-page image (the worst case).
    checkpoint: { type: "boolean", default: false },
    // Batch sizes of the claim and the ack (a fleet of many workers claims and acks in smaller ones).
    "claim-batch": { type: "string", default: "400" },
    "ack-batch": { type: "string", default: "500" },
  },
});
const jobs = Number(values.jobs);
const rounds = Number(values.rounds);
const singleJobs = Math.floor(jobs / 5);
const claimBatch = Number(values["claim-batch"]);
const ackBatch = Number(values["ack-batch"]);

const cluster = await startRestartableCluster({ database: "costs_tpl", isMigrated: true });
const binDir = process.env.PORTER_PG_BIN ?? join("/usr/lib/postgresql", readdirSync("/usr/lib/postgresql").sort((a, b) => Number(b) - Number(a))[0]!, "bin");
const urlOf = (db: string) => cluster.connectionString.replace(/\/costs_tpl$/, `/${db}`);
{
  const seed = createPool(cluster.connectionString, { max: 1 });
  await seed.query(`INSERT INTO pools (id, worker_concurrency) VALUES ('bench', 24)`);
  await seed.query(`INSERT INTO queues (id, pool_id) VALUES ('bench', 'bench')`);
  await seed.query(`INSERT INTO job_types (id, queue_id) VALUES ('bench.job', 'bench')`);
  await seed.query(`INSERT INTO tenants (id) VALUES ('bench')`);
  await seed.end();
}
const admin = new pg.Client(cluster.adminUrl);
await admin.connect();
const postmasterPid = Number(readFileSync(join(cluster.dataDir, "postmaster.pid"), "utf8").split("\n")[0]);

/** CPU ticks (1/100 s) of the cluster: the postmaster, its live children, and its exited children. */
const clusterTicks = (): number => {
  let sum = 0;
  for (const pid of readdirSync("/proc")) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      const isPostmaster = Number(pid) === postmasterPid;
      if (!isPostmaster && Number(f[1]) !== postmasterPid) continue;
      sum += Number(f[11]) + Number(f[12]) + (isPostmaster ? Number(f[13]) + Number(f[14]) : 0);
    } catch {
      // ended meanwhile
    }
  }
  return sum;
};

type Snapshot = { lsn: string; commits: number; tables: Map<string, TableRows>; ticks: number };

const snapshot = async (db: pg.Client): Promise<Snapshot> => {
  // Backends flush their statistics at most once a second: wait, force our own, read fresh.
  await new Promise((r) => setTimeout(r, 1100));
  await db.query(`SELECT pg_stat_force_next_flush()`);
  await db.query(`SELECT pg_stat_clear_snapshot()`);
  const { rows } = await db.query<{ relname: string; ins: string; upd: string; hot: string; del: string }>(
    `SELECT relname, n_tup_ins::text AS ins, n_tup_upd::text AS upd, n_tup_hot_upd::text AS hot, n_tup_del::text AS del FROM pg_stat_user_tables`,
  );
  const c = await db.query<{ commits: string; lsn: string }>(
    `SELECT xact_commit::text AS commits, pg_current_wal_lsn()::text AS lsn FROM pg_stat_database WHERE datname = current_database()`,
  );
  const tables = new Map(rows.map((r) => [r.relname, { ins: Number(r.ins), upd: Number(r.upd), hot: Number(r.hot), del: Number(r.del) }]));
  return { lsn: c.rows[0]!.lsn, commits: Number(c.rows[0]!.commits), tables, ticks: clusterTicks() };
};

/** Full-page-image bytes and total record bytes between two LSNs (pg_waldump --stats). */
const walBreakdown = async (from: string, to: string): Promise<{ fpi: number; total: number; byRmgr: Record<string, number> }> => {
  const { stdout } = await run(join(binDir, "pg_waldump"), ["-p", join(cluster.dataDir, "pg_wal"), "-s", from, "-e", to, "--stats"], {
    maxBuffer: 16 << 20,
  }).catch((error: { stdout?: string }) => ({ stdout: error.stdout ?? "" }));
  const byRmgr: Record<string, number> = {};
  let fpi = 0;
  let total = 0;
  for (const line of stdout.split("\n")) {
    // "Heap   N (pct)   record size (pct)   FPI size (pct)   combined size (pct)"; Total's pcts in [].
    const f = line
      .replace(/\(\s*[\d.]+\)|\[[\d.]+%\]/g, " ")
      .trim()
      .split(/\s+/);
    if (f.length !== 5 || !/^\d+$/.test(f[4]!)) continue;
    if (f[0] === "Total") {
      total = Number(f[4]);
      fpi = Number(f[3]);
    } else if (Number(f[4]) > 0) byRmgr[f[0]!] = Number(f[4]);
  }
  return { fpi, total, byRmgr };
};

type Wire = pg.Client | pg.Pool;
/** Bytes read and written on a client's socket (a pool of max 1: its one client's). */
const socketBytes = (w: Wire): number => {
  const c = w instanceof pg.Pool ? (w as unknown as { _clients: pg.Client[] })._clients[0] : w;
  if (!c) throw new Error("the pool has no client yet");
  const s = (c as unknown as { connection: { stream: { bytesRead: number; bytesWritten: number } } }).connection.stream;
  return s.bytesRead + s.bytesWritten;
};

const phase = async (name: PhaseCost["phase"], count: number, stats: pg.Client, wire: Wire | undefined, body: () => Promise<void>): Promise<PhaseCost> => {
  if (values.checkpoint) await stats.query("CHECKPOINT");
  const before = await snapshot(stats);
  const w0 = wire ? socketBytes(wire) : 0;
  const t0 = performance.now();
  await body();
  const wallS = (performance.now() - t0) / 1000;
  const w1 = wire ? socketBytes(wire) : 0;
  // A backend flushes its counters at most once a second, or 10 s after it went idle: make the
  // working one flush now (a pool's backends flush as they exit: the single phase ends its pool).
  if (wire) await wire.query(`SELECT pg_stat_force_next_flush()`);
  const after = await snapshot(stats);
  const wal = await walBreakdown(before.lsn, after.lsn);
  const lsnBytes = Number((await stats.query<{ d: string }>(`SELECT ($2::pg_lsn - $1::pg_lsn)::text AS d`, [before.lsn, after.lsn])).rows[0]!.d);
  const tables: Record<string, TableRows> = {};
  for (const [rel, a] of after.tables) {
    const b = before.tables.get(rel) ?? { ins: 0, upd: 0, hot: 0, del: 0 };
    const d = { ins: a.ins - b.ins, upd: a.upd - b.upd, hot: a.hot - b.hot, del: a.del - b.del };
    if (d.ins || d.upd || d.del) tables[rel] = d;
  }
  return {
    phase: name,
    jobs: count,
    wallS,
    walBytes: lsnBytes,
    fpiBytes: wal.fpi,
    walByRmgr: wal.byRmgr,
    // The snapshot's own statements commit too (4 per snapshot in the stats connection), and the flush.
    commits: after.commits - before.commits - 4 - (wire ? 1 : 0),
    pgCpuS: (after.ticks - before.ticks) / 100,
    netBytes: wire ? w1 - w0 : null,
    tables,
  };
};

const all: PhaseCost[][] = [];
for (let r = 0; r < rounds; r++) {
  const name = `costs_${r}`;
  await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await admin.query(`CREATE DATABASE ${name} TEMPLATE costs_tpl`);
  const url = urlOf(name);
  const clients = await Promise.all(
    [0, 1].map(async () => {
      const c = new pg.Client(url);
      await c.connect();
      return c;
    }),
  );
  const [stats, worker] = clients as [pg.Client, pg.Client];
  // The producer API's path: enqueueJobs on a pool (its own transaction, the virtual-time
  // reservation in a statement of its own). One connection, so its socket is the phase's wire.
  const producer = createPool(url, { max: 1 });
  const policyCache = new PolicyCache({ ttlMs: 600_000 });
  const results: PhaseCost[] = [];
  let k = 0;
  const make = (n: number): EnqueueInput[] =>
    Array.from({ length: n }, () => ({
      job_type: "bench.job",
      tenant_id: "bench",
      payload: { k: ++k, ref: `s3://bucket/doc-${k}` },
      idempotency_key: `k-${k}`,
    }));
  // Warm the policy cache and the prepared statements outside the measurement.
  await enqueueJobs(producer, make(10), { policyCache });
  results.push(
    await phase("enqueue", jobs, stats, producer, async () => {
      for (let i = 0; i < jobs; i += 1000) await enqueueJobs(producer, make(Math.min(1000, jobs - i)), { policyCache });
    }),
  );
  results.push(
    await phase("single", singleJobs, stats, undefined, async () => {
      const pool = createPool(url, { max: 8 });
      let left = singleJobs;
      await Promise.all(
        Array.from({ length: 32 }, async () => {
          while (left > 0) {
            left--;
            await enqueueJobs(pool, make(1), { policyCache });
          }
        }),
      );
      await pool.end();
    }),
  );
  const total = jobs + singleJobs + 10;
  const held: Array<{ id: string; leaseToken: string; attempt: number }> = [];
  results.push(
    await phase("claim", total, stats, worker, async () => {
      while (held.length < total) {
        const got = await claimJobs(worker, { poolId: "bench", workerId: "w1", limit: claimBatch });
        if (got.length === 0) throw new Error(`nothing claimable after ${held.length} of ${total}`);
        for (const j of got) held.push({ id: j.id, leaseToken: j.leaseToken, attempt: j.attempt });
      }
    }),
  );
  results.push(
    await phase("heartbeat", total, stats, worker, async () => {
      for (let i = 0; i < held.length; i += 1000) await extendLeases(worker, held.slice(i, i + 1000));
    }),
  );
  results.push(
    await phase("ack", total, stats, worker, async () => {
      for (let i = 0; i < held.length; i += ackBatch) {
        const out = await completeJobs(
          worker,
          held.slice(i, i + ackBatch).map((h) => ({ ...h, result: null })),
        );
        if (out.stale.length > 0) throw new Error(`${out.stale.length} stale acks`);
      }
    }),
  );
  all.push(results);
  for (const p of results) {
    console.log(
      `round ${r + 1} ${p.phase.padEnd(9)} ${p.jobs} jobs in ${p.wallS.toFixed(2)} s: WAL ${(p.walBytes / p.jobs).toFixed(0)} B/job `
        + `(FPI ${((p.fpiBytes / Math.max(1, p.walBytes)) * 100).toFixed(0)}%), commits ${(p.commits / p.jobs).toFixed(4)}/job, `
        + `PG CPU ${((p.pgCpuS / p.jobs) * 1e6).toFixed(1)} µs/job${p.netBytes === null ? "" : `, wire ${(p.netBytes / p.jobs).toFixed(0)} B/job`}; `
        + Object.entries(p.walByRmgr)
          .sort((a, b) => b[1] - a[1])
          .slice(0, 4)
          .map(([k, v]) => `${k} ${(v / p.jobs).toFixed(0)}`)
          .join(", "),
    );
  }
  await producer.end();
  for (const c of clients) await c.end();
  await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
}

console.log("\nMedians over rounds, per job:");
console.log("| phase | WAL B | of which FPI | commits | PG CPU µs | wire B | rows written (ins/upd/del per table) |");
console.log("|---|---|---|---|---|---|---|");
for (const ph of all[0]!.map((p) => p.phase)) {
  const ps = all.map((rs) => rs.find((p) => p.phase === ph)!);
  const per = (f: (p: PhaseCost) => number) => median(ps.map((p) => f(p) / p.jobs));
  const rows = Object.entries(ps[0]!.tables)
    .map(
      ([t, d]) =>
        `${t} ${[d.ins, d.upd, d.del].map((x) => (x / ps[0]!.jobs).toFixed(2)).join("/")}${d.hot ? ` (HOT ${(d.hot / ps[0]!.jobs).toFixed(2)})` : ""}`,
    )
    .join("; ");
  const wire = ps[0]!.netBytes === null ? "–" : per((p) => p.netBytes ?? 0).toFixed(0);
  console.log(
    `| ${ph} | ${per((p) => p.walBytes).toFixed(0)} | ${per((p) => p.fpiBytes).toFixed(0)} | ${per((p) => p.commits).toFixed(4)} | ${(per((p) => p.pgCpuS) * 1e6).toFixed(1)} | ${wire} | ${rows} |`,
  );
}
if (values.json) writeFileSync(values.json, JSON.stringify(all, null, 2));
await admin.end();
await cluster.stop();
