import { AppError } from "@porter/contracts";
import { useTestDatabase } from "@porter/db/testing/test-database";
import { beforeAll, beforeEach, describe, expect, it } from "vitest";
import { controlPlane } from "../testing/control-plane-factory";
import { createApiKey } from "./api-keys";
import { drainQueues, setQueuePaused, setQueuesPaused } from "./queue-control";

// Queue control and key creation through the Prisma client, as the runtime role (what the console
// and the CLI use): the pause flag and its audit rows commit together, and a function given a
// caller's transaction joins it.
const db = useTestDatabase();
const QUEUES = ["qc-a", "qc-b", "qc-c"];

beforeAll(async () => {
  await controlPlane(db.pool, { pool: "qc-pool", queues: QUEUES.map((id) => ({ id })), jobTypes: [], tenants: ["qc_t"] });
});
beforeEach(async () => {
  await db.pool.query(`UPDATE queues SET paused = false`);
});

const paused = async () =>
  Object.fromEntries(
    (await db.pool.query<{ id: string; paused: boolean }>(`SELECT id, paused FROM queues WHERE pool_id = 'qc-pool' ORDER BY id`)).rows.map((r) => [
      r.id,
      r.paused,
    ]),
  );
const audit = async (actor: string) =>
  (
    await db.pool.query<{ action: string; object_id: string; before: unknown; after: unknown; reason: string | null }>(
      `SELECT action, object_id, before, after, reason FROM audit_log WHERE actor = $1 ORDER BY id`,
      [actor],
    )
  ).rows;

describe("queue control on Prisma", () => {
  it("drainQueues pauses the queues that were running, audits only those, and returns them sorted", async () => {
    await setQueuePaused(db.appPrisma, { queueId: "qc-b", paused: true, actor: "user:setup" });
    expect(await drainQueues(db.appPrisma, { queueIds: ["qc-c", "qc-b", "qc-a"], actor: "user:drainer" })).toEqual(["qc-a", "qc-c"]);
    expect(await paused()).toEqual({ "qc-a": true, "qc-b": true, "qc-c": true });
    expect(await audit("user:drainer")).toEqual([
      { action: "queue.pause", object_id: "qc-a", before: { paused: false }, after: { paused: true }, reason: "drain" },
      { action: "queue.pause", object_id: "qc-c", before: { paused: false }, after: { paused: true }, reason: "drain" },
    ]);
  });

  it("setQueuesPaused resumes a pool's queues in one go, auditing only those that were paused", async () => {
    await drainQueues(db.appPrisma, { queueIds: ["qc-a", "qc-c"], actor: "user:setup" });
    expect(await setQueuesPaused(db.appPrisma, { queueIds: QUEUES, paused: false, actor: "user:resumer", reason: "back" })).toEqual(["qc-a", "qc-c"]);
    expect(await paused()).toEqual({ "qc-a": false, "qc-b": false, "qc-c": false });
    expect((await audit("user:resumer")).map((r) => [r.action, r.object_id, r.reason])).toEqual([
      ["queue.resume", "qc-a", "back"],
      ["queue.resume", "qc-c", "back"],
    ]);
  });

  it("an unknown queue among known ones is a 404 and pauses none of them", async () => {
    const error = await drainQueues(db.appPrisma, { queueIds: ["qc-a", "qc-nope"], actor: "user:typo" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AppError);
    expect((error as AppError).code).toBe("NOT_FOUND");
    expect(await paused()).toEqual({ "qc-a": false, "qc-b": false, "qc-c": false });
    expect(await audit("user:typo")).toEqual([]);
    expect(await drainQueues(db.appPrisma, { queueIds: [], actor: "user:typo" })).toEqual([]);
  });

  it("concurrent pauses of one queue: exactly one reports the change, each audit row says what it replaced", async () => {
    const results = await Promise.all(
      Array.from({ length: 4 }, (_, i) => setQueuePaused(db.appPrisma, { queueId: "qc-a", paused: true, actor: `user:racer${i}` })),
    );
    expect(results.filter(Boolean)).toHaveLength(1);
    const rows = (await db.pool.query<{ before: { paused: boolean } }>(`SELECT before FROM audit_log WHERE object_id = 'qc-a' AND actor LIKE 'user:racer%'`))
      .rows;
    expect(rows.map((r) => r.before.paused).sort()).toEqual([false, true, true, true]);
  });

  it("resume reports whether the flag changed; an unknown queue is a 404", async () => {
    await setQueuePaused(db.appPrisma, { queueId: "qc-a", paused: true, actor: "user:op" });
    expect(await setQueuePaused(db.appPrisma, { queueId: "qc-a", paused: false, actor: "user:op", reason: "done" })).toBe(true);
    expect(await setQueuePaused(db.appPrisma, { queueId: "qc-a", paused: false, actor: "user:op" })).toBe(false);
    await expect(setQueuePaused(db.appPrisma, { queueId: "qc-nope", paused: true, actor: "user:op" })).rejects.toMatchObject({ code: "NOT_FOUND" });
  });
});

describe("control-plane functions inside a caller's transaction", () => {
  it("createApiKey and setQueuePaused given a transaction commit or roll back with it", async () => {
    const keysBefore = Number((await db.pool.query<{ n: string }>(`SELECT count(*) AS n FROM api_keys`)).rows[0]!.n);
    const failed = await db.appPrisma
      .$transaction(async (tx) => {
        await createApiKey(tx, { tenantIds: ["qc_t"], jobTypes: ["*"], actor: "user:rolled-back" });
        await setQueuePaused(tx, { queueId: "qc-a", paused: true, actor: "user:rolled-back" });
        throw new Error("caller fails after both");
      })
      .catch((e: Error) => e.message);
    expect(failed).toBe("caller fails after both");
    expect(Number((await db.pool.query<{ n: string }>(`SELECT count(*) AS n FROM api_keys`)).rows[0]!.n)).toBe(keysBefore);
    expect(await paused()).toMatchObject({ "qc-a": false });
    expect(await audit("user:rolled-back")).toEqual([]);

    const created = await db.appPrisma.$transaction(async (tx) => {
      const key = await createApiKey(tx, { tenantIds: ["qc_t"], jobTypes: ["*"], actor: "user:committed" });
      await setQueuePaused(tx, { queueId: "qc-a", paused: true, actor: "user:committed" });
      return key;
    });
    expect(await paused()).toMatchObject({ "qc-a": true });
    expect((await audit("user:committed")).map((r) => [r.action, r.object_id])).toEqual([
      ["api_key.create", created.id],
      ["queue.pause", "qc-a"],
    ]);
  });

  it("createApiKey refuses unknown tenants and job types with a 400, writing nothing", async () => {
    await expect(createApiKey(db.appPrisma, { tenantIds: ["qc_t", "nobody"], jobTypes: ["*"], actor: "user:bad" })).rejects.toMatchObject({
      code: "BAD_REQUEST",
      message: "unknown tenant(s): nobody",
    });
    await expect(createApiKey(db.appPrisma, { tenantIds: ["qc_t"], jobTypes: ["no.such.type"], actor: "user:bad" })).rejects.toMatchObject({
      code: "BAD_REQUEST",
      message: "unknown job type(s): no.such.type",
    });
    expect(await audit("user:bad")).toEqual([]);
  });
});
