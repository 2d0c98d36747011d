import { createPool } from "@porter/db/pool";
import { type RestartableCluster, startRestartableCluster } from "@porter/db/testing/restartable-cluster";
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { controlPlane } from "../testing/control-plane-factory";
import { claimJobs } from "./claim-jobs";
import { completeJobs } from "./complete-jobs";
import { enqueueJobs } from "./enqueue-jobs";
import { extendLeases } from "./extend-leases";
import { rescueExpiredLeases } from "./rescue-expired-leases";

// Issue 9, defect 13: claims committed with synchronous_commit off were lost in a crash of
// PostgreSQL although the worker had them; the job ran again at the same attempt with no record
// of the first run, and the lease-token sequence could hand the same token out twice. A crash of
// its own cluster (pg_ctl restart -m immediate) right after the claim: the claim is still there.

let cluster: RestartableCluster;
let db: pg.Pool;

beforeAll(async () => {
  // The WAL writer flushes asynchronous commits every 200 ms by default: at its longest interval, an
  // asynchronous claim is certainly still unflushed when the server is killed right after it.
  cluster = await startRestartableCluster({ isMigrated: true, settings: { wal_writer_delay: "10s" } });
  db = createPool(cluster.connectionString, { max: 4 });
  await controlPlane(db, { queues: [{ id: "q1", lease_seconds: 30 }] });
}, 120_000);

afterAll(async () => {
  await db?.end();
  await cluster?.stop();
});

const row = async (id: string) =>
  (
    await db.query<{ state: string; attempt: number; lease_token: string | null; lease_owner: string | null }>(
      `SELECT state::text, attempt, lease_token::text, lease_owner FROM jobs WHERE id = $1`,
      [id],
    )
  ).rows[0];

/** Runs `fn` until the pool reconnects to the restarted server (its idle connections died with it). */
const afterRestart = async <T>(fn: () => Promise<T>): Promise<T> => {
  for (let i = 0; ; i++) {
    try {
      return await fn();
    } catch (error) {
      if (i >= 50) throw error;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
};

describe("a claim across an immediate restart of PostgreSQL", () => {
  it("survives it, and the stale worker's ack after the rescue is refused with its attempt recorded", async () => {
    const [enqueued] = await enqueueJobs(db, [{ job_type: "q1.job", tenant_id: "tenant_A", payload: { n: 1 }, idempotency_key: "crash-1" }]);
    const [claimed] = await claimJobs(db, { poolId: "p1", workerId: "w-before-crash", limit: 1 });
    expect(claimed).toMatchObject({ jobId: enqueued!.job_id, attempt: 1 });

    await cluster.restartImmediate();

    // The claim the worker acts on is still there: state, attempt, token and owner.
    expect(await afterRestart(() => row(claimed!.id))).toEqual({
      state: "RUNNING",
      attempt: 1,
      lease_token: claimed!.leaseToken,
      lease_owner: "w-before-crash",
    });
    // Nothing else can claim it, and the token sequence moved past the token handed out.
    expect(await claimJobs(db, { poolId: "p1", workerId: "w-after-crash", limit: 10 })).toEqual([]);
    const { rows } = await db.query<{ next: string }>(`SELECT nextval('lease_token_seq')::text AS next`);
    expect(BigInt(rows[0]!.next)).toBeGreaterThan(BigInt(claimed!.leaseToken));

    // The worker is lost: its lease expires and the rescue records the attempt and requeues it.
    expect(await rescueExpiredLeases(db, { now: new Date(Date.now() + 60_000) })).toMatchObject({ requeued: 1 });
    const { rows: attempts } = await db.query(`SELECT attempt, outcome::text, worker_id, lease_token::text FROM job_attempts WHERE job_id = $1`, [
      claimed!.jobId,
    ]);
    expect(attempts).toEqual([{ attempt: 1, outcome: "lease_expired", worker_id: "w-before-crash", lease_token: claimed!.leaseToken }]);

    // Claimed again: the next attempt under a new token; the stale worker's ack and heartbeat are refused.
    const [again] = await claimJobs(db, { poolId: "p1", workerId: "w-after-crash", limit: 1, now: new Date(Date.now() + 61_000) });
    expect(again).toMatchObject({ jobId: claimed!.jobId, attempt: 2 });
    expect(again!.leaseToken).not.toBe(claimed!.leaseToken);
    expect(await completeJobs(db, [{ id: claimed!.id, leaseToken: claimed!.leaseToken, attempt: claimed!.attempt, result: "stale" }])).toEqual({
      completed: [],
      stale: [claimed!.id],
      handedOver: [],
    });
    expect(await extendLeases(db, [{ id: claimed!.id, leaseToken: claimed!.leaseToken, attempt: claimed!.attempt }])).toMatchObject({
      lost: [claimed!.id],
    });
    expect(await completeJobs(db, [{ id: again!.id, leaseToken: again!.leaseToken, attempt: again!.attempt, result: "ok" }])).toMatchObject({
      completed: [again!.id],
    });
  }, 120_000);
});
