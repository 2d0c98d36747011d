import { claimJobs, failJobs, getJob, queueOverview, registerWorker, stopWorker } from "@porter/core";
import { useTestDatabase } from "@porter/db/testing/test-database";
import { describe, expect, it } from "vitest";
import { seedDemo } from "../seed/demo";
import { cliActor } from "./main";
import { runPorter } from "./run-porter";

const db = useTestDatabase();

// The everyday operations commands as a user runs them: a subprocess on the test database, as the runtime role.
const porter = (...args: string[]) => {
  const { PORTER_ADMIN_PASSWORD: _p, PORTER_ADMIN_EMAIL: _e, PORTER_APP_DATABASE_URL: _a, PORTER_APP_PASSWORD: _ap, ...env } = process.env;
  return runPorter(args, { env: { ...env, DATABASE_URL: db.connectionString } });
};

const count = async (sql: string, params: unknown[] = []) =>
  Number((await db.pool.query<{ n: string }>(`SELECT count(*)::text AS n FROM (${sql}) s`, params)).rows[0]!.n);

/** Seeding is idempotent, so the tests can run in any order. */
const seeded = () => seedDemo(db.prisma, { actor: "seed", adminEmail: "admin@porter.local" });

const enqueue = async (type: string, tenant: string, payload = '{"ms":1}'): Promise<string> => {
  const run = await porter("enqueue", "--type", type, "--tenant", tenant, "--payload", payload, "--json");
  expect(run.code, run.stderr).toBe(0);
  return (run.json as { job_id: string }).job_id;
};

/** A job a worker holds (RUNNING): enqueued with the top priority so the pool's next claim takes it. */
const runningJob = async (tenant: string) => {
  const jobId = await enqueue("diag.sleep", tenant);
  await db.pool.query(`UPDATE jobs SET priority = 100 WHERE job_id = $1`, [jobId]);
  const [claimed] = await claimJobs(db.pool, { poolId: "background", workerId: "test-worker", limit: 1 });
  expect(claimed?.jobId).toBe(jobId);
  return claimed!;
};

describe("porter CLI: everyday operations", () => {
  it("[LIST]: jobs list filters as the console does, pages with a cursor, prints a table or --json", async () => {
    await seeded();
    const a1 = await enqueue("diag.sleep", "tenant_A");
    const b1 = await enqueue("diag.sleep", "tenant_B");
    const a2 = await enqueue("diag.fail", "tenant_A", '{"mode":"permanent"}');
    const since = (await getJob(db.pool, a1))!.created_at;

    const all = await porter("jobs", "list", "--queue", "diag", "--from", since, "--json");
    expect(all.code, all.stderr).toBe(0);
    const page = all.json as { jobs: Array<{ job_id: string; state: string; tenant_id: string }>; next_cursor: string | null };
    expect(page.jobs.map((j) => j.job_id)).toEqual([a2, b1, a1]);
    expect(page.next_cursor).toBeNull();

    const tenantA = await porter("jobs", "list", "--queue", "diag", "--from", since, "--tenant", "tenant_A", "--job-type", "diag.sleep", "--json");
    expect((tenantA.json as typeof page).jobs.map((j) => j.job_id)).toEqual([a1]);
    const byId = await porter("jobs", "list", "--job-id", b1.toUpperCase(), "--json");
    expect((byId.json as typeof page).jobs.map((j) => j.job_id)).toEqual([b1]);
    const noneSucceeded = await porter("jobs", "list", "--queue", "diag", "--from", since, "--state", "succeeded,dead", "--json");
    expect(noneSucceeded.json).toEqual({ jobs: [], next_cursor: null });
    const ready = await porter("jobs", "list", "--queue", "diag", "--from", since, "--state", "READY", "--state", "RUNNING", "--json");
    expect((ready.json as typeof page).jobs).toHaveLength(3);

    const first = await porter("jobs", "list", "--queue", "diag", "--from", since, "--limit", "2", "--json");
    const firstPage = first.json as typeof page;
    expect(firstPage.jobs.map((j) => j.job_id)).toEqual([a2, b1]);
    expect(firstPage.next_cursor).toMatch(/^[A-Za-z0-9_-]{22}$/);
    const second = await porter("jobs", "list", "--queue", "diag", "--from", since, "--limit", "2", "--cursor", firstPage.next_cursor!, "--json");
    expect(second.json).toMatchObject({ jobs: [{ job_id: a1 }], next_cursor: null });

    const human = await porter("jobs", "list", "--queue", "diag", "--from", since, "--limit", "2");
    expect(human.code, human.stderr).toBe(0);
    const lines = human.stdout.trim().split("\n");
    expect(lines[0]).toMatch(/^job_id\s+state\s+queue\s+job_type\s+tenant\s+attempt\s+created_at\s+error$/);
    expect(lines[1]).toMatch(new RegExp(`^${a2}\\s+READY\\s+diag\\s+diag\\.fail\\s+tenant_A\\s+0/5\\s`));
    expect(lines.at(-1)).toBe(`next cursor: ${firstPage.next_cursor} (jobs list … --cursor ${firstPage.next_cursor})`);
    const empty = await porter("jobs", "list", "--queue", "no.such.queue");
    expect(empty.stdout.trim()).toBe("no jobs match");
  });

  it("[LIST-ERRORS]: a bad filter, limit or cursor is exit 2 with a message saying which", async () => {
    const cases: Array<[string[], RegExp]> = [
      [["--state", "READY,BOGUS"], /unknown state\(s\) BOGUS; states: READY, RUNNING/],
      [["--from", "yesterday"], /--from must be an ISO 8601 timestamp/],
      [["--from", "2026-12-02T00:00:00Z", "--to", "2026-12-01T00:00:00Z"], /--from must be before --to/],
      [["--limit", "0"], /--limit must be an integer from 1 to 200/],
      [["--cursor", "not-a-cursor"], /--cursor must be the cursor a previous page printed/],
      [["--job-id", "42"], /"42" is not a job id/],
      [["--tenant", " "], /--tenant must be 1 to 500 characters/],
      [["--colour", "red"], /Unknown option '--colour'/],
    ];
    const runs = await Promise.all(cases.map(([args]) => porter("jobs", "list", ...args, "--json")));
    for (const [i, run] of runs.entries()) {
      expect(run.code, run.stderr).toBe(2);
      expect(run.json).toMatchObject({ error: { code: "BAD_REQUEST", message: expect.stringMatching(cases[i]![1]) } });
      expect(run.stderr).toMatch(cases[i]![1]);
    }
  });

  it("[CANCEL]: jobs cancel cancels queued jobs, asks running ones to stop, skips the rest; audited with the CLI actor", async () => {
    await seeded();
    const queued = await enqueue("diag.sleep", "tenant_C");
    const running = await runningJob("tenant_C");
    const unknown = "00000000-0000-7000-8000-000000000001";

    const bad = await porter("jobs", "cancel", queued, "not-a-uuid", "--json");
    expect(bad.code).toBe(2);
    expect(bad.json).toMatchObject({ error: { code: "BAD_REQUEST", message: 'jobs cancel: "not-a-uuid" is not a job id (a UUID)' } });
    expect((await getJob(db.pool, queued))?.status).toBe("READY");
    expect((await porter("jobs", "cancel", "--json")).code).toBe(2);
    const longReason = await porter("jobs", "cancel", queued, "--reason", "x".repeat(501), "--json");
    expect(longReason.json).toMatchObject({ error: { code: "BAD_REQUEST", message: "jobs cancel: --reason must be at most 500 characters" } });

    const cancelled = await porter("jobs", "cancel", queued, running.jobId, unknown, "--reason", "wrong payload", "--json");
    expect(cancelled.code, cancelled.stderr).toBe(0);
    expect(cancelled.json).toEqual({
      changed: { cancelled: [queued], cancel_requested: [running.jobId] },
      skipped: [{ job_id: unknown, reason: "not found" }],
    });
    const job = await getJob(db.pool, queued);
    expect(job?.status).toBe("CANCELLED");
    expect(job?.timeline.at(-1)).toMatchObject({ kind: "cancelled", actor: cliActor(), data: { reason: "wrong payload" } });
    expect((await getJob(db.pool, running.jobId))?.cancel_requested).toBe(true);
    const audit = await db.pool.query(`SELECT object_id, actor, after, reason FROM audit_log WHERE action = 'job.cancel' AND object_id = ANY($1) ORDER BY id`, [
      [queued, running.jobId],
    ]);
    expect(audit.rows).toEqual([
      { object_id: queued, actor: cliActor(), after: { status: "CANCELLED" }, reason: "wrong payload" },
      { object_id: running.jobId, actor: cliActor(), after: { status: "RUNNING", cancel_requested: true }, reason: "wrong payload" },
    ]);

    const again = await porter("jobs", "cancel", queued);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout.trim().split("\n")).toEqual(["skipped: 1 job(s)", `  ${queued}: state CANCELLED`]);
  });

  it("[RETRY]: jobs retry makes a RETRY_WAIT job claimable now, audited; other states are skipped", async () => {
    await seeded();
    const claimed = await runningJob("tenant_B");
    const later = new Date(Date.now() + 3_600_000);
    await failJobs(db.pool, [
      {
        id: claimed.id,
        leaseToken: claimed.leaseToken,
        attempt: claimed.attempt,
        outcome: "failed",
        error: { code: "BOOM", class: "retryable", message: "boom", worker_version: "test", attempt: 1, trace_id: claimed.traceId, last_checkpoint: null },
        next: { state: "RETRY_WAIT", runAt: later },
      },
    ]);
    const ready = await enqueue("diag.sleep", "tenant_B");

    const human = await porter("jobs", "retry", claimed.jobId, ready, "--reason", "provider is back");
    expect(human.code, human.stderr).toBe(0);
    expect(human.stdout.trim().split("\n")).toEqual(["retried: 1 job(s)", `  ${claimed.jobId}`, "skipped: 1 job(s)", `  ${ready}: state READY`]);
    const { rows } = await db.pool.query<{ due: boolean; state: string }>(`SELECT state, run_at <= now() AS due FROM jobs WHERE job_id = $1`, [claimed.jobId]);
    expect(rows[0]).toEqual({ state: "RETRY_WAIT", due: true });
    expect(
      await count(`SELECT 1 FROM audit_log WHERE action = 'job.retry' AND object_id = $1 AND actor = $2 AND reason = 'provider is back'`, [
        claimed.jobId,
        cliActor(),
      ]),
    ).toBe(1);

    const again = await porter("jobs", "retry", claimed.jobId, "--json");
    expect(again.json).toEqual({ changed: { retried: [claimed.jobId] }, skipped: [] });
  });

  it("[QUEUES]: queues shows each queue's pool, paused state, running and counts per state", async () => {
    await seeded();
    expect((await porter("pause", "email.bulk", "--json")).code).toBe(0);
    const listed = await porter("queues", "--json");
    expect(listed.code, listed.stderr).toBe(0);
    const { queues } = listed.json as {
      queues: Array<{ queue_id: string; pool_id: string; paused: boolean; counts: Record<string, number>; running: number }>;
    };
    const expected = await queueOverview(db.pool);
    expect(queues.map((q) => [q.queue_id, q.pool_id, q.paused, q.counts, q.running])).toEqual(
      expected.map((q) => [q.queue_id, q.pool_id, q.paused, q.counts, q.running]),
    );
    expect(queues.find((q) => q.queue_id === "email.bulk")?.paused).toBe(true);
    const diag = queues.find((q) => q.queue_id === "diag")!;
    expect(diag.counts.READY).toBe(await count(`SELECT 1 FROM jobs WHERE queue_id = 'diag' AND state = 'READY'`));

    const human = await porter("queues", "--pool", "email");
    expect(human.stdout.trim()).toBe("no queues");
    const bulk = await porter("queues", "--pool", "background");
    const lines = bulk.stdout.trim().split("\n");
    expect(lines[0]).toMatch(
      /^queue\s+pool\s+state\s+running\s+READY\s+RUNNING\s+RETRY_WAIT\s+SUCCEEDED\s+DEAD\s+CANCELLED\s+EXPIRED\s+oldest_ready\s+done_5m$/,
    );
    expect(lines.find((l) => l.startsWith("email.bulk "))).toMatch(/^email\.bulk\s+background\s+paused\s/);
    expect(lines.find((l) => l.startsWith("diag "))).toMatch(new RegExp(`^diag\\s+background\\s+active\\s+${diag.running}/-\\s+${diag.counts.READY}\\s`));
    expect((await porter("resume", "email.bulk", "--json")).code).toBe(0);
  });

  it("[WORKERS]: workers lists live and lost workers (stopped ones with --all) with heartbeat age and slots", async () => {
    await seeded();
    await registerWorker(db.pool, { id: "w-live", poolId: "interactive", host: "host-a", pid: 101, version: "1.2.3", concurrency: 8 });
    await registerWorker(db.pool, { id: "w-lost", poolId: "interactive", host: "host-b", pid: 102, version: "1.2.3", concurrency: 4 });
    await registerWorker(db.pool, { id: "w-stopped", poolId: "interactive", host: "host-c", pid: 103, version: "1.2.3", concurrency: 2 });
    await db.pool.query(`UPDATE workers SET running = 3 WHERE id = 'w-live'`);
    await db.pool.query(`UPDATE workers SET heartbeat_at = now() - interval '10 minutes' WHERE id = 'w-lost'`);
    await stopWorker(db.pool, "w-stopped");

    const listed = await porter("workers", "--pool", "interactive", "--json");
    expect(listed.code, listed.stderr).toBe(0);
    const { workers } = listed.json as { workers: Array<{ id: string; status: string; running: number; concurrency: number; heartbeat_age_s: number }> };
    expect(workers.map((w) => [w.id, w.status, w.running, w.concurrency])).toEqual([
      ["w-live", "live", 3, 8],
      ["w-lost", "lost", 0, 4],
    ]);
    expect(workers[1]!.heartbeat_age_s).toBeGreaterThanOrEqual(600);
    const all = await porter("workers", "--pool", "interactive", "--all", "--json");
    expect((all.json as { workers: Array<{ id: string; status: string }> }).workers.map((w) => [w.id, w.status])).toEqual([
      ["w-live", "live"],
      ["w-lost", "lost"],
      ["w-stopped", "stopped"],
    ]);

    const human = await porter("workers", "--pool", "interactive");
    const lines = human.stdout.trim().split("\n");
    expect(lines[0]).toMatch(/^worker\s+status\s+pool\s+host\s+pid\s+heartbeat\s+running\s+version$/);
    expect(lines[1]).toMatch(/^w-live\s+live\s+interactive\s+host-a\s+101\s+\d+(\.\d)?s ago\s+3\/8\s+1\.2\.3$/);
    expect(lines[2]).toMatch(/^w-lost\s+lost\s+interactive\s+host-b\s+102\s+\d+(\.\d)?s ago\s+0\/4\s+1\.2\.3$/);
    expect((await porter("workers", "--pool", "agents")).stdout.trim()).toBe("no workers (stopped ones with --all)");
  });
});
