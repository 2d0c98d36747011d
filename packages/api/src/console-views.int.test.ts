import { claimJobs, completeJobs, enqueueJobs, failJobs, redriveJobs, WORKER_LOST_AFTER_MS } from "@porter/core";
import { controlPlane } from "@porter/core/testing/control-plane-factory";
import { withTransaction } from "@porter/db/pool";
import { useTestDatabase } from "@porter/db/testing/test-database";
import { beforeAll, describe, expect, it } from "vitest";
import { consoleCaller, sessionOf } from "./testing/console";

// The reads behind the console's views (issue 9, defect 10): the audit log's order and paging,
// attempts told apart across redrives, workers live/lost from their heartbeat, and the health of
// pools nobody serves.
const db = useTestDatabase();
const viewer = () => consoleCaller(db.pool, sessionOf("viewer"));

beforeAll(async () => {
  await controlPlane(db.pool, { pool: "cv-served", queues: [{ id: "cv-q" }], tenants: [{ id: "tenant_A" }] });
  await controlPlane(db.pool, { pool: "cv-unserved", queues: [{ id: "cv-stuck" }], tenants: [{ id: "tenant_A" }] });
  await db.pool.query(`INSERT INTO pools (id) VALUES ('cv-empty')`);
});

describe("audit.list", () => {
  it("pages over more than two pages newest first in numeric id order, without repeats or gaps", async () => {
    // 130 rows: ids cross 9 → 10 and 99 → 100, where text order and numeric order part.
    // The actor comes from the transaction (audit_log's trigger), as for every audit writer.
    await withTransaction(db.pool, async (tx) => {
      await tx.query(`SELECT set_config('porter.actor', 'user:pager@example.com', true)`);
      await tx.query(
        `INSERT INTO audit_log (action, object_type, object_id, reason)
         SELECT 'queue.pause', 'queue', 'q' || g, 'paging ' || g FROM generate_series(1, 130) g`,
      );
    });
    const expected = (
      await db.pool.query<{ id: string }>(`SELECT a.id::text AS id FROM audit_log a WHERE actor = 'user:pager@example.com' ORDER BY a.id DESC`)
    ).rows.map((r) => r.id);
    expect(expected.some((id) => id.length === 1) && expected.some((id) => id.length === 3)).toBe(true);

    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page: { entries: Array<{ id: string }>; next_cursor: string | null } = await viewer().audit.list({
        filter: { actor: "user:pager@example.com" },
        cursor,
        limit: 50,
      });
      seen.push(...page.entries.map((e) => e.id));
      cursor = page.next_cursor;
      pages++;
    } while (cursor !== null && pages < 10);

    expect(pages).toBe(3);
    expect(seen).toEqual(expected);
    expect(new Set(seen).size).toBe(130);
    expect(seen.map(Number)).toEqual([...seen.map(Number)].sort((a, b) => b - a));
  });

  it("without a filter the first page is the newest ids, in numeric order", async () => {
    const page = await viewer().audit.list({ limit: 20 });
    const ids = page.entries.map((e) => BigInt(e.id));
    const max = (await db.pool.query<{ max: string }>(`SELECT max(id)::text AS max FROM audit_log`)).rows[0]!.max;
    expect(ids[0]).toBe(BigInt(max));
    for (let i = 1; i < ids.length; i++) expect(ids[i]! < ids[i - 1]!).toBe(true);
  });
});

describe("jobs.get attempts", () => {
  it("numbers each run so that runs after redrives are told apart (run 3 · attempt 1 after redrive 2)", async () => {
    const [enqueued] = await enqueueJobs(db.pool, [{ job_type: "cv-q.job", tenant_id: "tenant_A", payload: { n: 1 }, idempotency_key: "cv-redriven" }], {
      notify: false,
    });
    const jobId = enqueued!.job_id;
    const claim = async () => {
      const [job] = await claimJobs(db.pool, { poolId: "cv-served", workerId: "cv-w", limit: 1 });
      expect(job?.jobId).toBe(jobId);
      return job!;
    };
    for (let life = 0; life < 3; life++) {
      const job = await claim();
      const error = {
        code: "BOOM",
        class: "permanent" as const,
        message: "boom",
        worker_version: "t",
        attempt: job.attempt,
        trace_id: "t",
        last_checkpoint: null,
      };
      await failJobs(db.pool, [{ id: job.id, leaseToken: job.leaseToken, attempt: job.attempt, outcome: "failed", error, next: { state: "DEAD" } }]);
      await redriveJobs(db.pool, { jobIds: [jobId], actor: "user:test", reason: `life ${life + 1}` });
    }
    const last = await claim();
    await completeJobs(db.pool, [{ id: last.id, leaseToken: last.leaseToken, attempt: last.attempt, result: { ok: true } }]);

    const { attempts } = await viewer().jobs.get({ job_id: jobId });
    expect(attempts.map((a) => [a.run, a.attempt, a.redrive, a.outcome])).toEqual([
      [1, 1, 0, "failed"],
      [2, 1, 1, "failed"],
      [3, 1, 2, "failed"],
      [4, 1, 3, "succeeded"],
    ]);
    expect(new Set(attempts.map((a) => `${a.run}/${a.attempt}/${a.redrive}`)).size).toBe(4);
  });
});

describe("workers and pool health", () => {
  beforeAll(async () => {
    const s = (ms: number) => `${ms / 1000} seconds`;
    await db.pool.query(
      `INSERT INTO workers (id, pool_id, host, pid, version, concurrency, heartbeat_at, stopped_at) VALUES
         ('cv-live', 'cv-served', 'h', 1, 'v', 4, now() - interval '2 seconds', NULL),
         ('cv-late', 'cv-served', 'h', 2, 'v', 4, now() - interval '${s(WORKER_LOST_AFTER_MS - 4_000)}', NULL),
         ('cv-killed', 'cv-unserved', 'h', 3, 'v', 4, now() - interval '${s(WORKER_LOST_AFTER_MS + 5_000)}', NULL),
         ('cv-stopped', 'cv-unserved', 'h', 4, 'v', 4, now() - interval '1 hour', now() - interval '1 hour')`,
    );
    await enqueueJobs(
      db.pool,
      [1, 2, 3].map((n) => ({ job_type: "cv-stuck.job", tenant_id: "tenant_A", payload: { n }, idempotency_key: `cv-stuck-${n}` })),
      { notify: false },
    );
  });

  it("pools.overview: a worker silent for a few heartbeats (a SIGKILL) is lost at once, not after 30 s; a late one is live", async () => {
    const pools = await viewer().pools.overview({ include_stopped: true });
    const status = Object.fromEntries(pools.flatMap((p) => p.workers).map((w) => [w.id, w.status]));
    expect(status).toMatchObject({ "cv-live": "live", "cv-late": "live", "cv-killed": "lost", "cv-stopped": "stopped" });
    const killed = pools.flatMap((p) => p.workers).find((w) => w.id === "cv-killed")!;
    expect(killed.heartbeat_age_s).toBeGreaterThan(WORKER_LOST_AFTER_MS / 1000);
  });

  it("overview.health: names the pool without a live worker and counts the jobs waiting for one", async () => {
    const health = await viewer().overview.health();
    const byPool = Object.fromEntries(health.map((p) => [p.pool_id, p]));
    expect(byPool["cv-served"]).toMatchObject({ live_workers: 2, lost_workers: 0, queues: 1 });
    expect(byPool["cv-unserved"]).toMatchObject({ live_workers: 0, lost_workers: 1, queues: 1, waiting: 3, paused_queues: 0 });
    expect(byPool["cv-empty"]).toMatchObject({ live_workers: 0, queues: 0, waiting: 0 });
  });
});
