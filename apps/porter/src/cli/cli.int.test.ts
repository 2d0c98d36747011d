import { JOB_ERROR_CODE_NAMES, JOB_ERROR_CODES, ZJobStatus } from "@porter/contracts";
import { claimJobs, completeJobs, failJobs, getJob, verifyApiKey, verifyPassword } from "@porter/core";
import { useTestDatabase } from "@porter/db/testing/test-database";
import { describe, expect, it } from "vitest";
import { seedDemo } from "../seed/demo";
import { COMMANDS, cliActor } from "./main";
import { runPorter } from "./run-porter";

const db = useTestDatabase();

// The CLI as a user runs it: a subprocess on the test database.
// DATABASE_URL is the owner's: every command but `migrate` connects as the runtime role derived from it.
const porter = (...args: string[]) => runPorter(args, { env: { ...cleanEnv(), DATABASE_URL: db.connectionString } });

const cleanEnv = () => {
  const {
    PORTER_ADMIN_PASSWORD: _password,
    PORTER_ADMIN_EMAIL: _email,
    PORTER_APP_DATABASE_URL: _app,
    PORTER_APP_PASSWORD: _appPassword,
    ...env
  } = process.env;
  return env;
};

const count = async (sql: string, params: unknown[] = []) =>
  Number((await db.pool.query<{ n: string }>(`SELECT count(*)::text AS n FROM (${sql}) s`, params)).rows[0]!.n);

/** Tests other than [SEED] need the demo configuration; seeding is idempotent, so any order works. */
const seeded = () => seedDemo(db.prisma, { actor: "seed", adminEmail: "admin@porter.local" });

/** A DEAD job, the way a worker makes one: claimed, then failed permanently. */
const makeDeadJob = async (): Promise<string> => {
  const enqueued = await porter("enqueue", "--type", "diag.fail", "--tenant", "tenant_B", "--payload", '{"mode":"permanent"}', "--json");
  const jobId = (enqueued.json as { job_id: string }).job_id;
  await db.pool.query(`UPDATE jobs SET priority = 100 WHERE job_id = $1`, [jobId]);
  const [claimed] = await claimJobs(db.pool, { poolId: "background", workerId: "test-worker", limit: 1 });
  expect(claimed?.jobId).toBe(jobId);
  await failJobs(db.pool, [
    {
      id: claimed!.id,
      leaseToken: claimed!.leaseToken,
      attempt: claimed!.attempt,
      outcome: "failed",
      error: { code: "BOOM", class: "permanent", message: "boom", worker_version: "test", attempt: 1, trace_id: claimed!.traceId, last_checkpoint: null },
      next: { state: "DEAD" },
    },
  ]);
  expect((await getJob(db.pool, jobId))?.status).toBe("DEAD");
  return jobId;
};

describe("porter CLI", () => {
  it("[ROLE]: migrate runs as the owner and grants the runtime role; other commands run as that role, warning when they are not", async () => {
    const migrated = await porter("migrate", "--json");
    expect(migrated.code, migrated.stderr).toBe(0);
    expect(migrated.json).toMatchObject({ applied: [], runtime_role: "porter_app", runtime_role_created: false });

    const missing = "00000000-0000-7000-8000-000000000000";
    const asRuntime = await porter("jobs", "get", missing, "--json");
    expect(asRuntime.json).toMatchObject({ error: { code: "NOT_FOUND" } });
    expect(asRuntime.stderr).not.toMatch(/warning/);

    // Pointed at the owner on purpose: it still works, with one warning.
    const asOwner = await runPorter(["jobs", "get", missing, "--json"], {
      env: { ...cleanEnv(), DATABASE_URL: db.connectionString, PORTER_APP_DATABASE_URL: db.connectionString },
    });
    expect(asOwner.json).toMatchObject({ error: { code: "NOT_FOUND" } });
    expect(asOwner.stderr.match(/warning: connected to PostgreSQL as "postgres", a superuser/g)).toHaveLength(1);
  });

  it("[SEED]: seeds the demo configuration once, with fixed ids; a second seed is a no-op", async () => {
    const first = await porter("seed", "--json");
    expect(first.code, first.stderr).toBe(0);
    const seeded = first.json as { created: boolean; admin_email: string; admin_password: string; producer_key: string };
    expect(seeded.created).toBe(true);
    expect(seeded.admin_email).toBe("admin@porter.local");
    expect(seeded.admin_password).toMatch(/^[A-Za-z0-9]{18}$/);
    expect(seeded.producer_key).toMatch(/^pk_[a-z0-9]{12}_/);

    const pools = await db.pool.query(`SELECT id FROM pools ORDER BY id`);
    expect(pools.rows.map((r) => r.id)).toEqual(["agents", "background", "interactive"]);
    const diag = await db.pool.query(`SELECT pool_id, lease_seconds, default_max_attempts, backoff_base_ms FROM queues WHERE id = 'diag'`);
    expect(diag.rows[0]).toEqual({ pool_id: "background", lease_seconds: 5, default_max_attempts: 5, backoff_base_ms: 1000 });
    const agents = await db.pool.query(
      `SELECT q.resource_key_id, p.concurrency_cap, r.concurrency_limit FROM queues q JOIN pools p ON p.id = q.pool_id JOIN resource_keys r ON r.id = q.resource_key_id WHERE q.id = 'agent.runs'`,
    );
    expect(agents.rows[0]).toEqual({ resource_key_id: "llm", concurrency_cap: 4, concurrency_limit: 4 });
    const tenants = await db.pool.query(`SELECT id, weight FROM tenants ORDER BY id`);
    expect(tenants.rows).toEqual([
      { id: "tenant_A", weight: 1 },
      { id: "tenant_B", weight: 1 },
      { id: "tenant_C", weight: 2 },
    ]);
    const types = await db.pool.query<{ id: string; queue_id: string }>(`SELECT id, queue_id FROM job_types ORDER BY id`);
    expect(Object.fromEntries(types.rows.map((r) => [r.id, r.queue_id]))).toEqual({
      "agent.run": "agent.runs",
      "diag.effect": "diag",
      "diag.fail": "diag",
      "diag.hang": "diag",
      "diag.sleep": "diag",
      "document.parse": "ks.background",
      "email.campaign": "email.bulk",
      "email.send": "email.transactional",
      "embed.chunks": "ks.background",
      "harvester.sync": "harvester.sync",
      "webhook.deliver": "notifications",
    });
    const admin = await db.pool.query<{ password_hash: string; role: string }>(`SELECT password_hash, role FROM users WHERE email = 'admin@porter.local'`);
    expect(admin.rows[0]?.role).toBe("admin");
    expect(await verifyPassword(admin.rows[0]!.password_hash, seeded.admin_password)).toBe(true);
    expect(await verifyApiKey(db.prisma, seeded.producer_key)).toMatchObject({ tenantIds: ["tenant_A", "tenant_B", "tenant_C"], jobTypes: ["*"] });
    expect(await count(`SELECT 1 FROM audit_log WHERE actor = 'seed' AND action = 'queue.create'`)).toBe(8);

    const auditBefore = await count(`SELECT 1 FROM audit_log`);
    const second = await porter("seed", "--json");
    expect(second.code, second.stderr).toBe(0);
    expect(second.json).toEqual({ created: false, admin_email: "admin@porter.local", admin_created: false });
    expect(await count(`SELECT 1 FROM audit_log`)).toBe(auditBefore);
    expect(await count(`SELECT 1 FROM api_keys`)).toBe(1);
    expect(await count(`SELECT 1 FROM users`)).toBe(1);
  });

  it("[KEYS]: keys create --json prints the key once with its scope; keys revoke disables it", async () => {
    await seeded();
    const created = await porter("keys", "create", "--tenant", "tenant_A,tenant_C", "--job-types", "email.send,diag.sleep", "--name", "ci", "--json");
    expect(created.code, created.stderr).toBe(0);
    const key = created.json as Record<string, unknown>;
    expect(Object.keys(key).sort()).toEqual(["id", "job_types", "key", "tenants"]);
    expect(key).toMatchObject({ tenants: ["tenant_A", "tenant_C"], job_types: ["email.send", "diag.sleep"] });
    expect(key.key).toMatch(new RegExp(`^pk_${key.id as string}_`));
    expect(created.stdout.trim().split("\n")).toHaveLength(1);
    expect(await verifyApiKey(db.prisma, key.key as string)).toMatchObject({ id: key.id, tenantIds: ["tenant_A", "tenant_C"] });

    const all = await porter("keys", "create", "--tenant", "tenant_B", "--json");
    expect(all.json).toMatchObject({ tenants: ["tenant_B"], job_types: ["*"] });
    const human = await porter("keys", "create", "--tenant", "tenant_B");
    expect(human.stdout.trim()).toMatch(/^pk_[a-z0-9]{12}_\S+$/);
    expect(human.stderr).toContain("not shown again");

    const revoked = await porter("keys", "revoke", key.id as string, "--json");
    expect(revoked.code, revoked.stderr).toBe(0);
    expect(await verifyApiKey(db.prisma, key.key as string)).toBeNull();
    const again = await porter("keys", "revoke", key.id as string, "--json");
    expect(again.code).toBe(1);
    expect(again.json).toMatchObject({ error: { code: "NOT_FOUND" } });

    const unknown = await porter("keys", "create", "--tenant", "tenant_Z", "--json");
    expect(unknown.code).toBe(2);
    expect(unknown.json).toMatchObject({ error: { code: "BAD_REQUEST", message: "unknown tenant(s): tenant_Z" } });
  });

  it("[ENQUEUE]: enqueue --json, then jobs get shows the job READY with an enqueued event; same key deduplicates", async () => {
    await seeded();
    const enqueued = await porter(
      "enqueue",
      "--type",
      "diag.sleep",
      "--tenant",
      "tenant_A",
      "--payload",
      '{"ms":10}',
      "--priority",
      "70",
      "--idempotency-key",
      "k-1",
      "--json",
    );
    expect(enqueued.code, enqueued.stderr).toBe(0);
    const result = enqueued.json as { job_id: string; status: string; deduplicated: boolean };
    expect(result).toMatchObject({ status: "READY", deduplicated: false });

    const got = await porter("jobs", "get", result.job_id, "--json");
    expect(got.code, got.stderr).toBe(0);
    const job = ZJobStatus.parse(got.json);
    expect(job).toMatchObject({
      job_id: result.job_id,
      status: "READY",
      job_type: "diag.sleep",
      tenant_id: "tenant_A",
      queue_id: "diag",
      priority: 70,
      idempotency_key: "k-1",
      payload: { ms: 10 },
      max_attempts: 5,
    });
    expect(job.timeline.map((e) => e.kind)).toEqual(["enqueued"]);

    const human = await porter("jobs", "get", result.job_id);
    expect(human.stdout).toMatch(/status:\s+READY/);
    expect(human.stdout).toMatch(/timeline:[\s\S]*enqueued/);

    const again = await porter("enqueue", "--type", "diag.sleep", "--tenant", "tenant_A", "--payload", '{"ms":10}', "--idempotency-key", "k-1", "--json");
    expect(again.json).toEqual({ job_id: result.job_id, status: "READY", deduplicated: true });
    const conflict = await porter("enqueue", "--type", "diag.sleep", "--tenant", "tenant_A", "--payload", '{"ms":11}', "--idempotency-key", "k-1", "--json");
    expect(conflict.code).toBe(1);
    expect(conflict.json).toMatchObject({ error: { code: "CONFLICT" } });

    const generated = await porter("enqueue", "--type", "diag.sleep", "--tenant", "tenant_A", "--payload", '{"ms":1}', "--json");
    const key = (await getJob(db.pool, (generated.json as { job_id: string }).job_id))?.idempotency_key;
    expect(key).toMatch(/^cli-[0-9a-f-]{36}$/);

    const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    const traced = await porter("enqueue", "--type", "diag.sleep", "--tenant", "tenant_A", "--traceparent", traceparent, "--json");
    expect(traced.code, traced.stderr).toBe(0);
    const shown = await porter("jobs", "get", (traced.json as { job_id: string }).job_id);
    expect(shown.stdout).toMatch(/trace_id:?\s+4bf92f3577b34da6a3ce929d0e0e4736\n/);
    expect(shown.stdout).toMatch(/traceparent:?\s+00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\n/);

    const missing = await porter("jobs", "get", "00000000-0000-4000-8000-000000000000", "--json");
    expect(missing.code).toBe(1);
    expect(missing.json).toMatchObject({ error: { code: "NOT_FOUND" } });
  });

  it("[REDRIVE]: `porter redrive` (an alias of `dlq redrive`) redrives through a durable redrive: dry run, then READY with lineage and an audit row", async () => {
    await seeded();
    const jobId = await makeDeadJob();
    const none = { expired: 0, partial: 0, permanent: 0, over_quota: 0, already: 0 };
    // The job's error is permanent: the dry run says so; with --force it is eligible.
    const dry = await porter("redrive", jobId, "--dry-run", "--json");
    expect(dry.json).toEqual({ eligible: 0, skipped: { ...none, permanent: 1 }, job_ids: [] });
    const forcedDry = await porter("redrive", jobId, "--force", "--dry-run", "--json");
    expect(forcedDry.json).toEqual({ eligible: 1, skipped: none, job_ids: [jobId] });
    expect((await getJob(db.pool, jobId))?.status).toBe("DEAD");

    const redriven = await porter("redrive", jobId, "--force", "--reason", "fixed the bug", "--json");
    expect(redriven.code, redriven.stderr).toBe(0);
    const { redrive_id } = redriven.json as { redrive_id: string };
    // One job: the first batch, run at once, finishes it.
    expect(redriven.json).toEqual({ redrive_id: expect.stringMatching(/^[0-9a-f-]{36}$/), status: "completed", total: 1 });
    const job = await getJob(db.pool, jobId);
    expect(job?.status).toBe("READY");
    expect(job?.attempt).toBe(0);
    expect(job?.timeline.at(-1)).toMatchObject({ kind: "redriven", actor: cliActor(), data: { redrive_id, attempts_before: 1, forced: true } });
    const audit = await db.pool.query(`SELECT actor, before, after, reason FROM audit_log WHERE action = 'job.redrive' AND object_id = $1`, [jobId]);
    expect(audit.rows).toEqual([{ actor: cliActor(), before: { status: "DEAD" }, after: { status: "READY", redrive_id }, reason: "fixed the bug" }]);

    const again = await porter("redrive", jobId, "--json");
    expect(again.json).toMatchObject({ status: "completed", total: 1 });
    const shown = await porter("dlq", "redrives", (again.json as { redrive_id: string }).redrive_id, "--json");
    expect(shown.json).toMatchObject({ redriven: 0, skipped: { ...none, already: 1 }, progress: 1 });
    const nothingDead = await porter("redrive", "--queue", "diag", "--error-code", "NO_SUCH_CODE", "--json");
    expect(nothingDead.code).toBe(2);
    expect(nothingDead.json).toMatchObject({ error: { code: "BAD_REQUEST" } });
    const usage = await porter("redrive", "--json");
    expect(usage.code).toBe(2);
    expect((await porter("redrive", "--help")).stdout).toContain("An alias of `porter dlq redrive`");
  });

  it("[DRAIN]: drain pauses the queue and waits until nothing of it runs; pause/resume flip the flag", async () => {
    await seeded();
    // A worker holds a diag job (and whatever else of the pool was ready).
    const enqueued = await porter("enqueue", "--type", "diag.sleep", "--tenant", "tenant_C", "--payload", '{"ms":1}', "--json");
    const jobId = (enqueued.json as { job_id: string }).job_id;
    const claimed = await claimJobs(db.pool, { poolId: "background", workerId: "test-worker", limit: 100 });
    expect(claimed.map((c) => c.jobId)).toContain(jobId);
    const runningInDiag = claimed.filter((c) => c.queueId === "diag").length;

    const timedOut = await porter("drain", "--queue", "diag", "--timeout-s", "1", "--json");
    expect(timedOut.code).toBe(1);
    expect(timedOut.json).toMatchObject({ error: { code: "DRAIN_TIMEOUT", details: { queues: ["diag"], running: { diag: runningInDiag } } } });
    expect(timedOut.stderr).toContain("resume diag");

    let sawRunning!: () => void;
    const running = new Promise<void>((resolve) => (sawRunning = resolve));
    const { PORTER_ADMIN_PASSWORD: _p, ...env } = process.env;
    const drain = runPorter(["drain", "--queue", "diag", "--json"], {
      env: { ...env, DATABASE_URL: db.connectionString },
      onStderr: (chunk) => chunk.includes(`${runningInDiag} running (diag ${runningInDiag})`) && sawRunning(),
    });
    await running;
    const paused = await db.pool.query(`SELECT paused FROM queues WHERE id = 'diag'`);
    expect(paused.rows[0]?.paused).toBe(true);
    await completeJobs(
      db.pool,
      claimed.map((c) => ({ id: c.id, leaseToken: c.leaseToken, attempt: c.attempt, result: { ok: true } })),
    );
    const drained = await drain;
    expect(drained.code, drained.stderr).toBe(0);
    expect(drained.json).toMatchObject({ drained: true, queues: ["diag"], running: 0, paused: ["diag"] });
    expect(drained.stderr).toContain("npm run porter -- resume diag");

    const resumed = await porter("resume", "diag", "--json");
    expect(resumed.json).toEqual({ queue: "diag", paused: false, changed: true });
    const pause = await porter("pause", "email.bulk", "--reason", "maintenance", "--json");
    expect(pause.json).toEqual({ queue: "email.bulk", paused: true, changed: true });
    expect(await count(`SELECT 1 FROM audit_log WHERE action = 'queue.pause' AND object_id = 'email.bulk' AND reason = 'maintenance'`)).toBe(1);
    const pool = await porter("drain", "--pool", "agents", "--json");
    expect(pool.json).toMatchObject({ drained: true, queues: ["agent.runs"] });
    const unknown = await porter("pause", "no.such.queue", "--json");
    expect(unknown.code).toBe(1);
    expect(unknown.json).toMatchObject({ error: { code: "NOT_FOUND" } });
  });

  it("[HELP]: every command answers --help with its usage and exit code 0", { timeout: 240_000 }, async () => {
    const calls = [["--help"], ...COMMANDS.map((c) => [...c.name.split(" "), "--help"])];
    // Four processes at a time: all 38 at once outlasted a minute on a loaded 2-core CI machine.
    const runs: Array<Awaited<ReturnType<typeof porter>>> = [];
    for (let i = 0; i < calls.length; i += 4) runs.push(...(await Promise.all(calls.slice(i, i + 4).map((args) => porter(...args)))));
    for (const [i, run] of runs.entries()) {
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout).toContain(i === 0 ? "Commands:" : `Usage: npm run porter -- ${COMMANDS[i - 1]!.name}`);
    }
  });

  it("[ERRORS]: bad input exits non-zero with a clear message and stores nothing", async () => {
    await seeded();
    const jobsBefore = await count(`SELECT 1 FROM jobs`);
    const keysBefore = await count(`SELECT 1 FROM idempotency_keys`);
    const unknownType = await porter("enqueue", "--type", "no.such.type", "--tenant", "tenant_A", "--payload", "{}");
    expect(unknownType.code).toBe(2);
    expect(unknownType.stderr).toContain('error: unknown job_type "no.such.type"');
    expect(unknownType.stdout).toBe("");
    const asJson = await porter("enqueue", "--type", "no.such.type", "--tenant", "tenant_A", "--json");
    expect(asJson.json).toEqual({ error: { code: "BAD_REQUEST", message: 'unknown job_type "no.such.type"', details: { job_type: "no.such.type" } } });
    const badPayload = await porter("enqueue", "--type", "diag.sleep", "--tenant", "tenant_A", "--payload", "[1]");
    expect(badPayload.code).toBe(2);
    expect(badPayload.stderr).toContain("--payload must be a JSON object");
    const missingTenant = await porter("enqueue", "--type", "diag.sleep", "--json");
    expect(missingTenant.json).toMatchObject({ error: { code: "BAD_REQUEST", message: expect.stringContaining("--tenant is required") } });
    const badPriority = await porter("enqueue", "--type", "diag.sleep", "--tenant", "tenant_A", "--priority", "high");
    expect(badPriority.code).toBe(2);
    const unknownOption = await porter("enqueue", "--type", "diag.sleep", "--tenant", "tenant_A", "--colour", "red");
    expect(unknownOption.stderr).toContain("Unknown option '--colour'");
    const unknownCommand = await porter("frobnicate");
    expect(unknownCommand.code).toBe(2);
    expect(unknownCommand.stderr).toContain('unknown command "frobnicate"');
    expect(await count(`SELECT 1 FROM jobs`)).toBe(jobsBefore);
    expect(await count(`SELECT 1 FROM idempotency_keys`)).toBe(keysBefore);
  });

  it("[ERROR-CODES]: porter errors lists the contracts' error codes (--json too), and redrive --help names them", async () => {
    const human = await porter("errors");
    expect(human.code, human.stderr).toBe(0);
    for (const code of JOB_ERROR_CODE_NAMES) expect(human.stdout).toMatch(new RegExp(`^${code}\\s+${JOB_ERROR_CODES[code].class}\\s`, "m"));
    const asJson = await porter("errors", "--json");
    expect(asJson.code, asJson.stderr).toBe(0);
    expect(asJson.json).toEqual({
      codes: JOB_ERROR_CODE_NAMES.map((code) => ({ code, class: JOB_ERROR_CODES[code].class, description: JOB_ERROR_CODES[code].description })),
    });
    const help = await porter("redrive", "--help");
    expect(help.code).toBe(0);
    for (const code of JOB_ERROR_CODE_NAMES) expect(help.stdout).toContain(code);
    expect(help.stdout).toContain("porter errors");
    const listed = await porter("--help");
    expect(listed.stdout).toMatch(/^\s+errors\s+list the job error codes/m);
    const unknownOption = await porter("errors", "--dead");
    expect(unknownOption.code).toBe(2);
  });
});
