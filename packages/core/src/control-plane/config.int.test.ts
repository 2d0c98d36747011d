// Control-plane writes through the Prisma Client, as the runtime role: refusals are typed (409 on
// a duplicate id, 400 naming an unknown reference, 400 on a failed CHECK) and write nothing — no
// row and no audit row.
import { AppError } from "@porter/contracts";
import { useTestDatabase } from "@porter/db/testing/test-database";
import { beforeAll, describe, expect, it } from "vitest";
import { createConfig, getConfig, updateConfig } from "../index";
import { createUser } from "./user-admin";

const db = useTestDatabase();
const actor = "user:admin@example.com";

const refusal = async (call: Promise<unknown>): Promise<AppError> => {
  const error = await call.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(AppError);
  return error as AppError;
};
const auditCount = async () => Number((await db.pool.query<{ n: string }>(`SELECT count(*)::text AS n FROM audit_log`)).rows[0]!.n);

beforeAll(async () => {
  await createConfig(db.appPrisma, "pool", { id: "cp-pool" }, { actor });
  await createConfig(db.appPrisma, "queue", { id: "cp-q", pool_id: "cp-pool" }, { actor });
});

describe("control-plane refusals through Prisma", () => {
  it("runs on the shared pool of the runtime role", async () => {
    const [row] = await db.appPrisma.$queryRaw<[{ user: string; app: string }]>`SELECT current_user::text AS user, current_setting('application_name') AS app`;
    // The pool's own application name: Prisma borrowed a connection of it rather than opening its own.
    expect(row).toEqual({ user: "porter_app", app: "porter-test-app" });
  });

  it("a duplicate id is a 409 on `id`", async () => {
    const before = await auditCount();
    const error = await refusal(createConfig(db.appPrisma, "queue", { id: "cp-q", pool_id: "cp-pool" }, { actor }));
    expect(error.code).toBe("CONFLICT");
    expect(error.details).toEqual({ issues: [{ path: ["id"], message: "already exists" }] });
    expect(await auditCount()).toBe(before);
  });

  it("an unknown reference is a 400 on that field, on create and on update", async () => {
    const before = await auditCount();
    const onCreate = await refusal(createConfig(db.appPrisma, "queue", { id: "cp-q2", pool_id: "nope" }, { actor }));
    expect(onCreate.code).toBe("BAD_REQUEST");
    expect(onCreate.details).toEqual({ issues: [{ path: ["pool_id"], message: "does not exist" }] });
    const onUpdate = await refusal(updateConfig(db.appPrisma, "queue", "cp-q", { resource_key_id: "nope" }, { actor }));
    expect(onUpdate.details).toEqual({ issues: [{ path: ["resource_key_id"], message: "does not exist" }] });
    const jobType = await refusal(createConfig(db.appPrisma, "job_type", { id: "cp.t", queue_id: "nope" }, { actor }));
    expect(jobType.details).toEqual({ issues: [{ path: ["queue_id"], message: "does not exist" }] });
    expect(await getConfig(db.appPrisma, "queue", "cp-q2")).toBeNull();
    expect((await getConfig(db.appPrisma, "queue", "cp-q"))!.resource_key_id).toBeNull();
    expect(await auditCount()).toBe(before);
  });

  it("a value the database's CHECK refuses (past the API's zod) is a 400 naming the constraint", async () => {
    const error = await refusal(updateConfig(db.appPrisma, "queue", "cp-q", { default_priority: -1 }, { actor }));
    expect(error.code).toBe("BAD_REQUEST");
    expect(error.message).toBe("invalid queue: queues_default_priority_check");
    expect((await getConfig(db.appPrisma, "queue", "cp-q"))!.default_priority).toBe(50);
  });

  it("a cross-field rule of the declaration refuses the merged row of an update (400 on the field)", async () => {
    const error = await refusal(updateConfig(db.appPrisma, "queue", "cp-q", { default_max_attempts: 30 }, { actor }));
    expect(error.details).toEqual({ issues: [{ path: ["default_max_attempts"], message: "must not exceed the retry ceiling (max attempts)" }] });
  });

  it("an update stamps updated_at with the database's clock and audits only what changed", async () => {
    const before = await getConfig(db.appPrisma, "queue", "cp-q");
    const after = await updateConfig(db.appPrisma, "queue", "cp-q", { lease_seconds: 45, max_attempts: 25 }, { actor, reason: "slower handler" });
    expect(after.lease_seconds).toBe(45);
    expect(Date.parse(after.updated_at)).toBeGreaterThan(Date.parse(before!.updated_at));
    const { rows } = await db.pool.query(`SELECT actor, action, before, after, reason FROM audit_log WHERE object_id = 'cp-q' ORDER BY id DESC LIMIT 1`);
    expect(rows[0]).toEqual({ actor, action: "queue.update", before: { lease_seconds: 30 }, after: { lease_seconds: 45 }, reason: "slower handler" });
  });

  it("a duplicate user email is a 409 on `email`", async () => {
    await createUser(db.appPrisma, { email: "dup@example.com", role: "viewer", password: "a-long-password-1", actor });
    const error = await refusal(createUser(db.appPrisma, { email: "DUP@example.com", role: "viewer", password: "a-long-password-1", actor }));
    expect(error.code).toBe("CONFLICT");
    expect(error.details).toEqual({ issues: [{ path: ["email"], message: "already in use" }] });
  });
});
