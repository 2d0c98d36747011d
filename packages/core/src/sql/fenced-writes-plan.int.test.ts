import type { TJobError } from "@porter/contracts";
import { useTestDatabase } from "@porter/db/testing/test-database";
import type pg from "pg";
import { beforeAll, describe, expect, it } from "vitest";
import { listAttempts } from "../reads/console-reads";
import { controlPlane } from "../testing/control-plane-factory";
import { cloneJobs } from "../testing/fixtures";
import { requestCancel } from "./cancel-job";
import { type ClaimedJob, claimJobs } from "./claim-jobs";
import { completeJobs } from "./complete-jobs";
import { enqueueJobs } from "./enqueue-jobs";
import { extendLeases, type LeaseRef } from "./extend-leases";
import { failJobs } from "./fail-jobs";
import { handBackJobs } from "./hand-back-jobs";
import { saveCheckpoint } from "./save-checkpoint";
import { startJobs } from "./start-jobs";

// A worker's fenced writes name their jobs by id (acks, failures, hand-backs, start marks, lease
// extensions, checkpoints, the effect ledger's lease checks; and by job_id, a cancel request and
// the console's attempts of a job). Their `state = 'RUNNING'` guard also
// matches the predicate of jobs_running_idx, and when the statistics say few jobs run — they were
// taken while none did, which is how a table's statistics usually look between bursts — the
// planner read the whole running set through that index and hash-joined it to the batch: an ack of
// 50 read all 10,000 RUNNING rows (20 ms instead of a fraction of one). Each write must find its
// jobs by primary key, whatever the statistics say: what is counted is the rows of jobs the write
// read (pg_stat_xact_user_tables: by index scans or sequentially; PostgreSQL 15 keeps no
// per-transaction counts per index), with the statistics pinned.
const db = useTestDatabase();
const RUNNING = 5_000;
const BATCH = 20;
let claimed: ClaimedJob[] = [];

const error: TJobError = { code: "BOOM", class: "retryable", message: "boom", worker_version: "test", attempt: 1, trace_id: "t", last_checkpoint: null };

beforeAll(async () => {
  await controlPlane(db.pool, { pool: { id: "p1", worker_concurrency: 100_000 }, queues: [{ id: "q1" }], tenants: ["tenant_A"] });
  await enqueueJobs(db.pool, [{ job_type: "q1.job", tenant_id: "tenant_A", payload: {}, idempotency_key: "a0" }]);
  await cloneJobs(db.pool, { template: "a0", count: RUNNING - 1, prefix: "a" });
  // Statistics taken while nothing runs, and kept: autovacuum must not analyze the table after the claims.
  await db.pool.query(`ALTER TABLE jobs SET (autovacuum_enabled = off)`);
  await db.pool.query(`VACUUM ANALYZE jobs`);
  while (claimed.length < RUNNING) {
    const batch = await claimJobs(db.pool, { poolId: "p1", workerId: "w", limit: 1000 });
    if (batch.length === 0) break;
    claimed.push(...batch);
  }
  expect(claimed.length).toBe(RUNNING);
  claimed = claimed.slice(0, BATCH);
});

const refs = (): LeaseRef[] => claimed.map((c) => ({ id: c.id, leaseToken: c.leaseToken, attempt: c.attempt }));

/**
 * Runs `write` in a transaction that is rolled back (every case starts from the same RUNNING set),
 * under `mode`, and returns the rows of jobs it read (by any index, or sequentially).
 */
const rowsRead = async (mode: "auto" | "force_generic_plan", write: (client: pg.PoolClient) => Promise<unknown>): Promise<number> => {
  const client = await db.pool.connect();
  try {
    await client.query("BEGIN");
    await client.query(`SET LOCAL plan_cache_mode = ${mode}`);
    // Named statements are prepared once per connection: the first write prepares and is undone,
    // the second is measured with the statement's plan as a worker's later calls use it.
    await client.query("SAVEPOINT first");
    await write(client);
    await client.query("ROLLBACK TO SAVEPOINT first");
    const before = await readsOf(client);
    await write(client);
    const reads = (await readsOf(client)) - before;
    await client.query("ROLLBACK");
    return reads;
  } finally {
    client.release(true);
  }
};
const readsOf = async (client: pg.PoolClient): Promise<number> => {
  const { rows } = await client.query<{ n: string }>(`SELECT (idx_tup_fetch + seq_tup_read)::text AS n FROM pg_stat_xact_user_tables WHERE relname = 'jobs'`);
  return Number(rows[0]!.n);
};

const WRITES: Array<[string, (client: pg.PoolClient) => Promise<unknown>]> = [
  [
    "ack (completeJobs)",
    (c) =>
      completeJobs(
        c,
        refs().map((r) => ({ ...r, result: null })),
      ),
  ],
  [
    "failure to RETRY_WAIT (failJobs)",
    (c) =>
      failJobs(
        c,
        refs().map((r) => ({ ...r, outcome: "failed" as const, error, next: { state: "RETRY_WAIT" as const, runAt: new Date() } })),
      ),
  ],
  [
    "failure to DEAD (failJobs)",
    (c) =>
      failJobs(
        c,
        refs().map((r) => ({ ...r, outcome: "failed" as const, error, next: { state: "DEAD" as const } })),
      ),
  ],
  ["hand-back (handBackJobs)", (c) => handBackJobs(c, refs())],
  ["start marks (startJobs)", (c) => startJobs(c, refs())],
  ["lease extension (extendLeases)", (c) => extendLeases(c, refs())],
  ["checkpoint (saveCheckpoint)", (c) => saveCheckpoint(c, refs()[0]!, `{"page":1}`)],
  [
    "effect ledger's lease checks (porter_effect_claim, porter_effect_commit)",
    async (c) => {
      const j = claimed[0]!;
      const args = [j.id, j.leaseToken, j.attempt, j.tenantId, `k-${j.id}`];
      await c.query(`SELECT * FROM porter_effect_claim($1, $2, $3, $4, $5, $6)`, [...args, j.jobId]);
      await c.query(`SELECT porter_effect_commit($1, $2, $3, $4, $5, 'null'::jsonb)`, args);
    },
  ],
  [
    "effect ledger's lease check at close (porter_effect_close)",
    (c) => {
      const j = claimed[0]!;
      return c.query(`SELECT porter_effect_close($1, $2, $3, $4, $5, $6, 'null'::jsonb)`, [j.id, j.leaseToken, j.attempt, j.tenantId, `kc-${j.id}`, j.jobId]);
    },
  ],
  [
    "cancel request of running jobs (requestCancel, by job_id)",
    (c) => requestCancel(c, { jobIds: claimed.map((j) => j.jobId), tenantIds: null, jobTypes: null, reason: null, actor: "test", now: null }),
  ],
  ["the console's attempts of a job (listAttempts, by job_id)", (c) => listAttempts(c, claimed[0]!.jobId)],
];

describe("writes (and a read) of RUNNING jobs named by id, with statistics that say nothing runs and 5,000 jobs RUNNING", () => {
  for (const [name, write] of WRITES) {
    it(`${name}: finds its jobs by their key, not by reading the running set`, async () => {
      // Its own jobs (20, a few more for what a write reads again); the defect read every RUNNING row (5,000).
      expect(await rowsRead("auto", write)).toBeLessThanOrEqual(3 * BATCH);
      expect(await rowsRead("force_generic_plan", write)).toBeLessThanOrEqual(3 * BATCH);
    });
  }
});
