import { advanceRedrives } from "@porter/core";
import { controlPlane } from "@porter/core/testing/control-plane-factory";
import { killJobs } from "@porter/core/testing/dead-jobs";
import { useTestDatabase } from "@porter/db/testing/test-database";
import { beforeAll, describe, expect, it } from "vitest";
import { seedDemo } from "../seed/demo";
import { runPorter } from "./run-porter";

// `porter dlq redrive | redrives | abort` as a user runs them (subprocesses on the test database):
// dry run, a durable redrive at a velocity, its progress (and --watch to the end), abort, bad usage.
const db = useTestDatabase();
const porter = (...args: string[]) =>
  runPorter(args, { env: { ...process.env, DATABASE_URL: db.connectionString, PORTER_APP_DATABASE_URL: db.appConnectionString } });
const none = { expired: 0, partial: 0, permanent: 0, over_quota: 0, already: 0 };

let dead: string[];
let permanent: string[];

beforeAll(async () => {
  await seedDemo(db.prisma, { actor: "seed", adminEmail: "admin@porter.local" });
  dead = await killJobs(db.pool, 6, { jobType: "diag.fail", tenantId: "tenant_B", code: "DEPENDENCY_UNAVAILABLE" }, "background");
  permanent = await killJobs(db.pool, 1, { jobType: "diag.fail", tenantId: "tenant_B", code: "DIAG_PERMANENT", errorClass: "permanent" }, "background");
});

describe("porter dlq redrive", () => {
  it("dry run, then a redrive at 2 jobs/s whose progress `dlq redrives --watch` follows to the end", async () => {
    const dry = await porter("dlq", "redrive", "--queue", "diag", "--dry-run", "--json");
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.json).toEqual({ eligible: 6, skipped: { ...none, permanent: 1 }, job_ids: dead });
    const human = await porter("dlq", "redrive", "--queue", "diag", "--dry-run");
    expect(human.stdout).toContain("would redrive 6 job(s); skipped 1");
    expect(human.stdout).toContain(`${permanent[0]} permanent`);

    const created = await porter(
      "dlq",
      "redrive",
      "--queue",
      "diag",
      "--error-code",
      "DEPENDENCY_UNAVAILABLE",
      "--rate",
      "2",
      "--reason",
      "provider back",
      "--json",
    );
    expect(created.code, created.stderr).toBe(0);
    expect(created.json).toEqual({ redrive_id: expect.stringMatching(/^[0-9a-f-]{36}$/), status: "running", total: 6 });
    const id = (created.json as { redrive_id: string }).redrive_id;

    const shown = await porter("dlq", "redrives", id, "--json");
    // The first batch (2) went at once; 4 left at 2/s.
    expect(shown.json).toMatchObject({ redrive_id: id, status: "running", total: 6, redriven: 2, eta_s: 2, reason: "provider back" });
    expect((await porter("dlq", "redrives", id)).stdout).toMatch(new RegExp(`${id} running: 2 of 6 done \\(33%\\), 2 redriven, 0 skipped at 2/s, ETA 2 s`));

    // The maintenance leader's part, played here: batches with the real clock while --watch follows
    // — from its first progress line on (a CLI process can take seconds to start on a loaded machine).
    let watching = "";
    const watch = runPorter(["dlq", "redrives", id, "--watch", "--every", "0.2", "--json"], {
      env: { ...process.env, DATABASE_URL: db.connectionString, PORTER_APP_DATABASE_URL: db.appConnectionString },
      onStderr: (chunk) => (watching += chunk),
    });
    let finished = false;
    void watch.then(() => (finished = true));
    const started = Date.now() + 60_000;
    while (!finished && !/running: \d of 6 done/.test(watching) && Date.now() < started) await new Promise((resolve) => setTimeout(resolve, 50));
    const until = Date.now() + 20_000;
    while (!finished && Date.now() < until) {
      await advanceRedrives(db.pool);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const watched = await watch;
    expect(watched.code, watched.stderr).toBe(0);
    expect(watched.json).toMatchObject({ redrive_id: id, status: "completed", redriven: 6, progress: 1, eta_s: null });
    expect(watched.stderr).toMatch(/running: \d of 6 done/);

    const listed = await porter("dlq", "redrives", "--json");
    expect((listed.json as { redrives: Array<{ redrive_id: string }> }).redrives.map((r) => r.redrive_id)).toContain(id);
  });

  it("abort stops a running redrive (audited); a finished one cannot be aborted", async () => {
    const created = await porter("dlq", "redrive", permanent[0]!, "--force", "--rate", "0.1", "--json");
    // Rate 0.1: a batch of 1, which the first batch takes: completed at once.
    expect(created.json).toMatchObject({ status: "completed", total: 1 });
    const finishedAbort = await porter("dlq", "abort", (created.json as { redrive_id: string }).redrive_id, "--json");
    expect(finishedAbort.code).toBe(1);
    expect(finishedAbort.json).toMatchObject({ error: { code: "CONFLICT" } });

    // A pool of its own: the first test's redriven jobs wait in the demo's pool.
    await controlPlane(db.pool, { pool: "cli-abort", queues: [{ id: "cli-abort" }], tenants: ["tenant_B"] });
    const more = await killJobs(db.pool, 3, { jobType: "cli-abort.job", tenantId: "tenant_B" }, "cli-abort");
    const slow = await porter("dlq", "redrive", ...more, "--rate", "0.1", "--json");
    const id = (slow.json as { redrive_id: string }).redrive_id;
    expect(slow.json).toMatchObject({ status: "running", total: 3 });
    const aborted = await porter("dlq", "abort", id, "--reason", "wrong fix", "--json");
    expect(aborted.code, aborted.stderr).toBe(0);
    expect(aborted.json).toMatchObject({ redrive_id: id, status: "aborted", redriven: 1 });
    const audit = await db.pool.query(`SELECT reason FROM audit_log WHERE action = 'redrive.abort' AND object_id = $1`, [id]);
    expect(audit.rows).toEqual([{ reason: "wrong fix" }]);
  });

  it("refuses bad usage with exit 2 and unknown redrives with exit 1; every command has --help", async () => {
    for (const args of [
      ["dlq", "redrive", "--json"],
      ["dlq", "redrive", "--group", "1", "--queue", "diag", "--json"],
      ["dlq", "redrive", "--queue", "diag", "--rate", "0", "--json"],
      ["dlq", "redrive", "--queue", "diag", "--from", "yesterday", "--json"],
      ["dlq", "redrive", "--group", "abc", "--json"],
      ["dlq", "redrive", "not-a-uuid", "--json"],
      ["dlq", "abort", "not-a-uuid", "--json"],
      ["dlq", "redrives", "--status", "done", "--json"],
    ]) {
      const run = await porter(...args);
      expect(run.code, args.join(" ")).toBe(2);
      expect(run.json, args.join(" ")).toMatchObject({ error: { code: "BAD_REQUEST" } });
    }
    const unknown = await porter("dlq", "redrives", "00000000-0000-4000-8000-000000000000", "--json");
    expect(unknown.code).toBe(1);
    expect(unknown.json).toMatchObject({ error: { code: "NOT_FOUND" } });
    const noGroup = await porter("dlq", "redrive", "--group", "987654", "--json");
    expect(noGroup.json).toMatchObject({ error: { code: "NOT_FOUND" } });
    for (const name of ["redrive", "redrives", "abort"]) {
      const help = await porter("dlq", name, "--help", "--json");
      expect(help.code).toBe(0);
      expect(help.json).toMatchObject({ command: `dlq ${name}`, help: expect.stringContaining(`Usage: npm run porter -- dlq ${name}`) });
    }
  });
});
