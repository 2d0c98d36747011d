import { controlPlane } from "@porter/core/testing/control-plane-factory";
import { useTestDatabase } from "@porter/db/testing/test-database";
import { TRPCError } from "@trpc/server";
import { beforeAll, describe, expect, it } from "vitest";
import { auditOf, consoleCaller, enqueueMany, moveJobs, sessionOf } from "./testing/console";

// Every console mutation writes its audit row in the same transaction as the change: when the
// audit insert fails (a test trigger refuses rows of the "saboteur" user), the change is rolled
// back too; when it succeeds, the row says who did what to which object, before → after.
const db = useTestDatabase();
const admin = () => consoleCaller(db.appPool, sessionOf("admin", "admin@example.com"));
const saboteur = () => consoleCaller(db.appPool, sessionOf("admin", "saboteur@example.com"));

beforeAll(async () => {
  await controlPlane(db.pool, { pool: "au-pool", queues: [{ id: "au-q" }], tenants: [{ id: "au_t" }] });
  await db.pool.query(`
    INSERT INTO resource_keys (id) VALUES ('au-rk');
    CREATE FUNCTION refuse_saboteur_audit() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF NEW.actor = 'user:saboteur@example.com' THEN RAISE EXCEPTION 'audit insert refused (test)'; END IF;
      RETURN NEW;
    END $$;
    CREATE TRIGGER refuse_saboteur_audit BEFORE INSERT ON audit_log FOR EACH ROW EXECUTE FUNCTION refuse_saboteur_audit();
  `);
});

const rejects = async (call: Promise<unknown>) => {
  const error = await call.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(TRPCError);
  expect((error as TRPCError).code).toBe("INTERNAL_SERVER_ERROR");
};
const one = async <T>(sql: string, params: unknown[] = []) => (await db.pool.query(sql, params)).rows[0] as T;

describe("control-plane mutations: audited in the same transaction", () => {
  it("queues.create: no queue without its audit row; with it, the new values", async () => {
    await rejects(saboteur().queues.create({ id: "au-new", pool_id: "au-pool", lease_seconds: 12 }));
    expect(await one(`SELECT count(*)::int AS n FROM queues WHERE id = 'au-new'`)).toEqual({ n: 0 });
    await admin().queues.create({ id: "au-new", pool_id: "au-pool", lease_seconds: 12, reason: "new lane" });
    const [row] = await auditOf(db.pool, "queue", "au-new");
    expect(row).toMatchObject({ actor: "user:admin@example.com", action: "queue.create", before: null, reason: "new lane" });
    expect(row!.after).toMatchObject({ id: "au-new", pool_id: "au-pool", lease_seconds: 12, max_attempts: 25 });
  });

  it("queues.update: the knob stays unchanged when the audit fails; the row holds only what changed", async () => {
    await rejects(saboteur().queues.update({ id: "au-q", patch: { max_attempts: 9, default_max_attempts: 3 } }));
    expect(await one(`SELECT max_attempts FROM queues WHERE id = 'au-q'`)).toEqual({ max_attempts: 25 });
    await admin().queues.update({ id: "au-q", patch: { max_attempts: 9, default_max_attempts: 3, lease_seconds: 30 } });
    const rows = await auditOf(db.pool, "queue", "au-q");
    expect(rows.at(-1)).toMatchObject({
      action: "queue.update",
      before: { max_attempts: 25, default_max_attempts: 5 },
      after: { max_attempts: 9, default_max_attempts: 3 },
    });
  });

  it("queues.update refuses a merged row that breaks a cross-field rule (400 on the field), writing nothing", async () => {
    const error = await admin()
      .queues.update({ id: "au-q", patch: { default_max_attempts: 50 } })
      .catch((e: TRPCError) => e);
    expect((error as TRPCError).code).toBe("BAD_REQUEST");
    expect(await one(`SELECT default_max_attempts FROM queues WHERE id = 'au-q'`)).toEqual({ default_max_attempts: 3 });
  });

  it("queues.pause / resume / drain", async () => {
    await rejects(saboteur().queues.pause({ id: "au-q" }));
    expect(await one(`SELECT paused FROM queues WHERE id = 'au-q'`)).toEqual({ paused: false });
    await admin().queues.drain({ id: "au-q" });
    expect(await one(`SELECT paused FROM queues WHERE id = 'au-q'`)).toEqual({ paused: true });
    await rejects(saboteur().queues.resume({ id: "au-q" }));
    expect(await one(`SELECT paused FROM queues WHERE id = 'au-q'`)).toEqual({ paused: true });
    await admin().queues.resume({ id: "au-q", reason: "drained" });
    const actions = (await auditOf(db.pool, "queue", "au-q")).slice(-2);
    expect(actions).toMatchObject([
      { action: "queue.pause", before: { paused: false }, after: { paused: true }, reason: "drain" },
      { action: "queue.resume", before: { paused: true }, after: { paused: false }, reason: "drained" },
    ]);
  });

  it("pools, tenants, job types, resource keys", async () => {
    await rejects(saboteur().pools.update({ id: "au-pool", patch: { worker_concurrency: 3 } }));
    await rejects(saboteur().tenants.update({ id: "au_t", patch: { weight: 7 } }));
    await rejects(saboteur().jobTypes.create({ id: "au.type", queue_id: "au-q" }));
    await rejects(saboteur().resourceKeys.update({ id: "au-rk", patch: { concurrency_limit: 2 } }));
    expect(
      await one(`SELECT (SELECT worker_concurrency FROM pools WHERE id = 'au-pool') AS wc, (SELECT weight FROM tenants WHERE id = 'au_t') AS w,
                             (SELECT count(*)::int FROM job_types WHERE id = 'au.type') AS jt, (SELECT concurrency_limit FROM resource_keys WHERE id = 'au-rk') AS cl`),
    ).toEqual({
      wc: 10,
      w: 1,
      jt: 0,
      cl: null,
    });
    await admin().pools.update({ id: "au-pool", patch: { worker_concurrency: 3 } });
    await admin().tenants.update({ id: "au_t", patch: { weight: 7, backlog_cap: 100 } });
    await admin().jobTypes.create({ id: "au.type", queue_id: "au-q", payload_schema_version: "2" });
    await admin().resourceKeys.update({ id: "au-rk", patch: { concurrency_limit: 2 } });
    expect((await auditOf(db.pool, "pool", "au-pool")).at(-1)).toMatchObject({
      action: "pool.update",
      before: { worker_concurrency: 10 },
      after: { worker_concurrency: 3 },
    });
    expect((await auditOf(db.pool, "tenant", "au_t")).at(-1)).toMatchObject({
      action: "tenant.update",
      before: { weight: 1, backlog_cap: null },
      after: { weight: 7, backlog_cap: 100 },
    });
    expect((await auditOf(db.pool, "job_type", "au.type")).at(-1)).toMatchObject({
      action: "job_type.create",
      after: { queue_id: "au-q", payload_schema_version: "2" },
    });
    expect((await auditOf(db.pool, "resource_key", "au-rk")).at(-1)).toMatchObject({
      action: "resource_key.update",
      before: { concurrency_limit: null },
      after: { concurrency_limit: 2 },
    });
  });

  it("users: create and update are audited without the password or its hash", async () => {
    await rejects(saboteur().users.create({ email: "new@example.com", role: "viewer", password: "a-long-password" }));
    expect(await one(`SELECT count(*)::int AS n FROM users WHERE email = 'new@example.com'`)).toEqual({ n: 0 });
    const user = await admin().users.create({ email: "New@Example.com", role: "viewer", password: "a-long-password" });
    expect(user.email).toBe("new@example.com");
    await admin().users.update({ id: user.id, role: "operator", password: "another-long-password" });
    const rows = await auditOf(db.pool, "user", user.id);
    expect(rows).toMatchObject([
      { action: "user.create", after: { email: "new@example.com", role: "viewer" } },
      { action: "user.update", before: { role: "viewer" }, after: { role: "operator", password: "changed" } },
    ]);
    expect(JSON.stringify(rows)).not.toMatch(/argon2|long-password/);
  });

  it("users.update refuses to leave no enabled admin (409)", async () => {
    const { rows } = await db.pool.query<{ id: string }>(
      `INSERT INTO users (id, email, password_hash, role) VALUES ('only-admin', 'only@example.com', 'x', 'admin') RETURNING id`,
    );
    const error = await admin()
      .users.update({ id: rows[0]!.id, disabled: true })
      .catch((e: TRPCError) => e);
    expect((error as TRPCError).code).toBe("CONFLICT");
  });

  it("API keys: create returns the key once and stores a hash; revoke is audited", async () => {
    const created = await admin().apiKeys.create({ tenant_ids: ["au_t"], job_types: ["*"], name: "ci" });
    expect(created.key).toMatch(/^pk_[a-z0-9]{12}_/);
    const stored = await one<{ secret_hash: string }>(`SELECT secret_hash FROM api_keys WHERE id = $1`, [created.id]);
    expect(created.key).not.toContain(stored.secret_hash);
    expect(JSON.stringify(await admin().apiKeys.list())).not.toContain(created.key.split("_").at(-1)!);
    await rejects(saboteur().apiKeys.revoke({ id: created.id }));
    expect(await one(`SELECT revoked_at FROM api_keys WHERE id = $1`, [created.id])).toEqual({ revoked_at: null });
    await admin().apiKeys.revoke({ id: created.id });
    expect((await auditOf(db.pool, "api_key", created.id)).map((r) => r.action)).toEqual(["api_key.create", "api_key.revoke"]);
  });
});

describe("job actions: audited in the same transaction", () => {
  const operator = () => consoleCaller(db.appPool, sessionOf("operator", "op@example.com"));
  const sabotagingOperator = () => consoleCaller(db.appPool, sessionOf("operator", "saboteur@example.com"));
  const stateOf = async (id: string) =>
    (await one<{ state: string }>(`SELECT state::text FROM jobs WHERE job_id = $1 UNION ALL SELECT state::text FROM finished_jobs WHERE job_id = $1`, [id]))
      .state;

  it("cancel: the job stays queued when the audit fails; otherwise CANCELLED with a job.cancel row", async () => {
    const [id] = await enqueueMany(db.pool, 1, { jobType: "au-q.job", tenantId: "au_t" });
    await rejects(sabotagingOperator().jobs.cancel({ selection: { job_ids: [id!] }, dry_run: false }));
    expect(await stateOf(id!)).toBe("READY");
    const result = await operator().jobs.cancel({ selection: { job_ids: [id!] }, dry_run: false, reason: "bad batch" });
    expect(result).toMatchObject({ applied: 1, eligible: 1 });
    expect(await stateOf(id!)).toBe("CANCELLED");
    expect(await auditOf(db.pool, "job", id!)).toMatchObject([
      { actor: "user:op@example.com", action: "job.cancel", after: { status: "CANCELLED" }, reason: "bad batch" },
    ]);
  });

  it("retry now: RETRY_WAIT keeps its backoff when the audit fails; otherwise runs now", async () => {
    const [id] = await enqueueMany(db.pool, 1, { jobType: "au-q.job", tenantId: "au_t" });
    await moveJobs(db.pool, [id!], "RETRY_WAIT");
    await rejects(sabotagingOperator().jobs.retry({ selection: { job_ids: [id!] }, dry_run: false }));
    expect(await one(`SELECT run_at > now() + interval '30 minutes' AS later FROM jobs WHERE job_id = $1`, [id])).toEqual({ later: true });
    await operator().jobs.retry({ selection: { job_ids: [id!] }, dry_run: false });
    expect(await one(`SELECT run_at <= now() AS due FROM jobs WHERE job_id = $1`, [id])).toEqual({ due: true });
    expect((await auditOf(db.pool, "job", id!)).map((r) => r.action)).toEqual(["job.retry"]);
  });

  it("redrive: DEAD stays DEAD when the audit fails; otherwise READY with a job.redrive row", async () => {
    const [id] = await enqueueMany(db.pool, 1, { jobType: "au-q.job", tenantId: "au_t" });
    await moveJobs(db.pool, [id!], "DEAD");
    // Forced: the fixture's error is permanent.
    await rejects(sabotagingOperator().jobs.redrive({ selection: { job_ids: [id!] }, dry_run: false, force: true }));
    expect(await stateOf(id!)).toBe("DEAD");
    await operator().jobs.redrive({ selection: { job_ids: [id!] }, dry_run: false, force: true, reason: "fixed upstream" });
    expect(await stateOf(id!)).toBe("READY");
    expect(await auditOf(db.pool, "job", id!)).toMatchObject([
      { action: "job.redrive", before: { status: "DEAD" }, after: { status: "READY" }, reason: "fixed upstream" },
    ]);
  });

  it("the audit log itself refuses UPDATE and DELETE (append-only in the database)", async () => {
    await expect(db.pool.query(`UPDATE audit_log SET actor = 'mallory'`)).rejects.toThrow(/append-only/);
    await expect(db.pool.query(`DELETE FROM audit_log`)).rejects.toThrow(/append-only/);
  });
});
