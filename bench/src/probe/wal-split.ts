// Probe (not part of the suite): WAL per job, split into enqueue, claim and ack, on a fresh
// `porter_perf` database. Enqueue in calls of 1000 (enqueueJobs), then claim+ack cycles of `batch`
// on one connection, the WAL position read between every statement, so each byte is charged to the
// statement that wrote it (full-page images included: CHECKPOINT=1 checkpoints before each phase,
// the worst case; without it the cluster's own checkpoints decide). Prints the LSN ranges for
// pg_waldump (bench/scripts/wal-by-relation.sh reads them per record type and relation).
//   PERF_SERVER=postgres://postgres@127.0.0.1:5499 npx tsx bench/src/probe/wal-split.ts [jobs] [batch]
import { claimJobs, completeJobs, type EnqueueInput, enqueueJobs, PolicyCache } from "@porter/core";
import type pg from "pg";
import { freshPerfDatabase } from "./perf-db";

const [jobs, batch] = [Number(process.argv[2] ?? 20_000), Number(process.argv[3] ?? 500)];
const isCheckpointed = process.env.CHECKPOINT === "1";
const pool = await freshPerfDatabase({ connections: 2 });
const policyCache = new PolicyCache({ ttlMs: 60_000 });
const client = await pool.connect();
// STREAM_LOGGED=1: the status stream's log as it was before issue 15 (a logged table), for a
// before/after in one run.
if (process.env.STREAM_LOGGED === "1") await client.query(`ALTER TABLE job_stream SET LOGGED`);
// SETUP_SQL='…': run once on the fresh database before the enqueue (a variant's schema change, for an A/B).
if (process.env.SETUP_SQL) await client.query(process.env.SETUP_SQL);
const lsn = async (db: pg.PoolClient): Promise<{ text: string; bytes: bigint }> => {
  const { rows } = await db.query<{ l: string; b: string }>(`SELECT pg_current_wal_insert_lsn()::text AS l, (pg_current_wal_insert_lsn() - '0/0')::text AS b`);
  return { text: rows[0]!.l, bytes: BigInt(rows[0]!.b) };
};
const { rows: db } = await client.query<{ oid: number }>(`SELECT oid FROM pg_database WHERE datname = current_database()`);
let i = 0;
const make = (n: number): EnqueueInput[] =>
  Array.from({ length: n }, () => ({ job_type: "bench.job", tenant_id: "bench", payload: { k: ++i }, idempotency_key: `k-${i}` }));

if (isCheckpointed) await client.query(`CHECKPOINT`);
const e0 = await lsn(client);
for (let done = 0; done < jobs; done += 1000) await enqueueJobs(pool, make(Math.min(1000, jobs - done)), { policyCache, notify: false });
const e1 = await lsn(client);
if (isCheckpointed) await client.query(`CHECKPOINT`);
const b0 = await lsn(client);
let claimWal = 0n;
let ackWal = 0n;
let claimed = 0;
for (;;) {
  const a = await lsn(client);
  const got = await claimJobs(client, { poolId: "bench", workerId: "wal-probe", limit: batch });
  const b = await lsn(client);
  if (got.length === 0) break;
  await completeJobs(
    client,
    got.map((j) => ({ id: j.id, leaseToken: j.leaseToken, attempt: j.attempt, result: null })),
  );
  const c = await lsn(client);
  claimWal += b.bytes - a.bytes;
  ackWal += c.bytes - b.bytes;
  claimed += got.length;
}
const b1 = await lsn(client);
if (claimed !== jobs) throw new Error(`claimed ${claimed} of ${jobs}`);
const per = (bytes: bigint) => (Number(bytes) / jobs).toFixed(0);
console.log(`${jobs} jobs, claim/ack batches of ${batch}${isCheckpointed ? ", CHECKPOINT before each phase" : ""}: WAL bytes per job`);
console.log(`  enqueue ${per(e1.bytes - e0.bytes)}   claim ${per(claimWal)}   ack ${per(ackWal)}   burn-down (claim+ack+reads) ${per(b1.bytes - b0.bytes)}`);
console.log(`  database oid ${db[0]!.oid}; enqueue LSN ${e0.text}..${e1.text}; burn-down LSN ${b0.text}..${b1.text}`);
client.release();
await pool.end();
