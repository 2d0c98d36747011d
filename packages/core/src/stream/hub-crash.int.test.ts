import { createPool } from "@porter/db/pool";
import { type RestartableCluster, startRestartableCluster } from "@porter/db/testing/restartable-cluster";
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { claimJobs } from "../sql/claim-jobs";
import { completeJobs } from "../sql/complete-jobs";
import { enqueueJobs } from "../sql/enqueue-jobs";
import { controlPlane } from "../testing/control-plane-factory";
import { StreamHub } from "./hub";
import { cursorRetained, parseCursor, type StreamRow } from "./log";
import { STREAM_CHANNEL } from "./notifier";

// Issue 15 (WAL per job): the stream's log is an unlogged table, so a crash of PostgreSQL empties
// it — events committed but not yet read are gone. What a subscriber must get instead: a `reset`
// and a snapshot of the jobs as they are (from the job rows, which are logged), from the running
// hub as from a resume with a Last-Event-ID of before the crash; and live events after it.

let cluster: RestartableCluster;
let db: pg.Pool;
let hub: StreamHub;

beforeAll(async () => {
  cluster = await startRestartableCluster({ isMigrated: true });
  db = createPool(cluster.connectionString, { max: 4 });
  await controlPlane(db, { queues: [{ id: "q1" }] });
  hub = new StreamHub({ pool: db, listen: { connectionString: cluster.connectionString }, pollMs: 60_000, debounceMs: 5, reconnectMs: { min: 50, max: 200 } });
}, 120_000);

afterAll(async () => {
  await hub?.close();
  await db?.end();
  await cluster?.stop();
});

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

let n = 0;
const enqueue = async () => {
  const [r] = await enqueueJobs(db, [{ job_type: "q1.job", tenant_id: "tenant_A", payload: { n: ++n }, idempotency_key: `crash-${n}` }], { notify: false });
  return r!.job_id;
};

describe("the status stream across an immediate restart of PostgreSQL", () => {
  it("resets the hub's subscribers with a snapshot of the jobs; old cursors are reset; live events follow", async () => {
    const events: StreamRow[] = [];
    let resets = 0;
    const sub = await hub.subscribe(
      { tenantId: "tenant_A", jobTypes: null },
      {
        onEvent: (row) => events.push(row),
        onReset: () => {
          resets++;
        },
      },
    );
    // A job runs to its end; no NOTIFY wakes the hub (its poll is a minute): its last events are
    // committed but unread when the server dies.
    const before = await enqueue();
    const [claimed] = await claimJobs(db, { poolId: "p1", workerId: "w", limit: 1 });
    await completeJobs(db, [{ id: claimed!.id, leaseToken: claimed!.leaseToken, attempt: claimed!.attempt, result: { ok: 1 } }]);
    const last = (
      await db.query<{ x: string; i: string; k: number }>(
        `SELECT xid::text AS x, id::text AS i, cardinality(job_ids) AS k FROM job_stream ORDER BY xid DESC, id DESC LIMIT 1`,
      )
    ).rows[0]!;
    const cursorBefore = parseCursor(`${last.x}-${last.i}-${last.k}`)!;
    expect(await cursorRetained(db, cursorBefore)).toBe(true);

    await cluster.restartImmediate();

    // The job rows survived; the log did not.
    const state = await afterRestart(() => db.query<{ state: string }>(`SELECT state::text FROM finished_jobs WHERE job_id = $1`, [before]));
    expect(state.rows[0]?.state).toBe("SUCCEEDED");
    expect((await db.query(`SELECT count(*)::int AS n FROM job_stream`)).rows[0].n).toBe(0);
    // The hub's listener reconnects, finds the server restarted, resets its subscriber with a
    // snapshot: the live jobs of the tenant (none: the one job finished, its row tells the client).
    await expect.poll(() => resets, { timeout: 15_000 }).toBe(1);
    expect(hub.resets).toBe(1);
    // A client resuming from a cursor of before the crash is reset too.
    expect(await cursorRetained(db, cursorBefore)).toBe(false);
    // Live events follow, after the reset.
    const after = await enqueue();
    await db.query(`SELECT pg_notify($1, '')`, [STREAM_CHANNEL]);
    await expect.poll(() => events.map((e) => e.jobId), { timeout: 10_000 }).toContain(after);
    sub.close();
  }, 120_000);

  it("does not reset when the listener reconnects to the same server", async () => {
    let resets = 0;
    const sub = await hub.subscribe({ tenantId: "tenant_A", jobTypes: null }, { onEvent: () => {}, onReset: () => resets++ });
    const was = hub.resets;
    await db.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'porter-stream'`);
    await expect
      .poll(async () => (await db.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'porter-stream'`)).rows[0].n, {
        timeout: 10_000,
      })
      .toBe(1);
    await new Promise((r) => setTimeout(r, 300));
    expect(resets).toBe(0);
    expect(hub.resets).toBe(was);
    sub.close();
  }, 60_000);
});
