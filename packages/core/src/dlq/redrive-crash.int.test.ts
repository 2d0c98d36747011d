import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { useTestDatabase } from "@porter/db/testing/test-database";
import { afterEach, describe, expect, it } from "vitest";
import { controlPlane } from "../testing/control-plane-factory";
import { killJobs } from "../testing/dead-jobs";
import { getRedrive } from "./redrive-read";
import { createRedrive } from "./redrive-runner";

// SIGKILL of the process running a redrive, mid-redrive: a new process resumes it, and every item
// is done exactly once (one `redriven` event per job with this redrive_id, the counters add up).

const db = useTestDatabase();
const ROOT = fileURLToPath(new URL("../../../../", import.meta.url));
const LOOP = fileURLToPath(new URL("../testing/redrive-loop.ts", import.meta.url));
const children: ChildProcess[] = [];

afterEach(() => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
});

/** Starts a runner process (as the runtime role) and resolves once it is connected. */
const startRunner = async (): Promise<ChildProcess> => {
  const child = spawn(`${ROOT}node_modules/.bin/tsx`, [LOOP, db.appConnectionString, "10"], { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] });
  children.push(child);
  let stderr = "";
  child.stderr!.on("data", (d) => (stderr += String(d)));
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on("data", (d) => String(d).includes("ready") && resolve());
    child.on("exit", (code) => reject(new Error(`runner exited (${code}): ${stderr}`)));
  });
  return child;
};

const waitFor = async (what: string, check: () => Promise<boolean>, timeoutMs = 30_000) => {
  const until = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
};

describe("a redrive survives the SIGKILL of its runner", () => {
  it("resumes in a new process and redrives every job exactly once", async () => {
    await controlPlane(db.pool, { queues: [{ id: "crash", lease_seconds: 30, max_runtime_s: 60 }] });
    const jobs: string[] = [];
    for (let i = 0; i < 4; i++) jobs.push(...(await killJobs(db.pool, 150, { jobType: "crash.job" })));
    const created = await createRedrive(db.pool, { selection: { job_ids: jobs }, ratePerS: 150, actor: "crash-test" });
    const progress = async () => (await getRedrive(db.pool, created.redrive_id))!;

    const first = await startRunner();
    // Killed mid-redrive: after some batches committed, before the last.
    await waitFor("the first batches", async () => (await progress()).redriven >= 150);
    first.kill("SIGKILL");
    await new Promise((resolve) => first.once("exit", resolve));
    const atKill = await progress();
    expect(atKill.status).toBe("running");
    expect(atKill.redriven).toBeLessThan(600);

    await startRunner();
    await waitFor("the redrive to complete", async () => (await progress()).status === "completed");
    const done = await progress();
    expect(done).toMatchObject({ total: 600, redriven: 600, skipped: { expired: 0, partial: 0, permanent: 0, over_quota: 0, already: 0 } });

    const { rows } = await db.pool.query<{ job_id: string; n: number }>(
      `SELECT job_id::text, count(*)::int AS n FROM job_events WHERE kind = 'redriven' AND data ->> 'redrive_id' = $1 GROUP BY job_id`,
      [created.redrive_id],
    );
    expect(rows).toHaveLength(600);
    expect(rows.filter((r) => r.n !== 1)).toEqual([]);
    expect(new Set(rows.map((r) => r.job_id))).toEqual(new Set(jobs));
    const counts = await db.pool.query(
      `SELECT (SELECT count(*)::int FROM jobs WHERE job_id = ANY($1::uuid[]) AND state = 'READY' AND redrive_count = 1) AS ready,
              (SELECT count(*)::int FROM finished_jobs WHERE job_id = ANY($1::uuid[])) AS finished,
              (SELECT count(*)::int FROM redrive_items WHERE redrive_id = $2 AND state = 'redriven' AND done_at IS NOT NULL) AS items,
              (SELECT count(*)::int FROM audit_log WHERE action = 'job.redrive' AND after ->> 'redrive_id' = $2::text) AS audits`,
      [jobs, created.redrive_id],
    );
    expect(counts.rows[0]).toEqual({ ready: 600, finished: 0, items: 600, audits: 600 });
  });
});
