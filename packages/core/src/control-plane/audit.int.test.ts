import { withTransaction } from "@porter/db/pool";
import { useTestDatabase } from "@porter/db/testing/test-database";
import { describe, expect, it } from "vitest";
import { writeAudit } from "./audit";

const db = useTestDatabase();

const rows = async () => (await db.pool.query<{ actor: string; action: string; at: Date }>(`SELECT actor, action, at FROM audit_log ORDER BY id`)).rows;

describe("writeAudit as the runtime role", () => {
  it("records each entry under its own actor, in order, stamped by the database within the transaction", async () => {
    const started = (await db.appPool.query<{ now: Date }>(`SELECT now()`)).rows[0]!.now;
    await withTransaction(db.appPool, (client) =>
      writeAudit(client, [
        { actor: "user:ann", action: "queue.pause", objectType: "queue", objectId: "q1" },
        { actor: "user:ann", action: "queue.resume", objectType: "queue", objectId: "q1" },
        { actor: "cli:root", action: "job.redrive", objectType: "job", objectId: "j1", reason: "fixed" },
        { actor: "user:ann", action: "queue.pause", objectType: "queue", objectId: "q2" },
      ]),
    );
    const written = await rows();
    expect(written.map((r) => [r.actor, r.action])).toEqual([
      ["user:ann", "queue.pause"],
      ["user:ann", "queue.resume"],
      ["cli:root", "job.redrive"],
      ["user:ann", "queue.pause"],
    ]);
    // One transaction: one database time for all of them, no earlier than the transaction.
    expect(new Set(written.map((r) => r.at.getTime())).size).toBe(1);
    expect(written[0]!.at.getTime()).toBeGreaterThanOrEqual(started.getTime());
  });

  it("on a pool, opens a transaction of its own; the actor does not outlive it on the connection", async () => {
    const pool = db.appPool;
    await writeAudit(pool, [{ actor: "user:bob", action: "tenant.update", objectType: "tenant", objectId: "t1" }]);
    expect((await rows()).at(-1)).toMatchObject({ actor: "user:bob", action: "tenant.update" });
    const client = await pool.connect();
    try {
      const leaked = await client.query<{ actor: string | null }>(`SELECT nullif(current_setting('porter.actor', true), '') AS actor`);
      expect(leaked.rows[0]!.actor).toBeNull();
      // And a raw insert that names an actor without setting one is refused.
      await expect(client.query(`INSERT INTO audit_log (actor, action, object_type, object_id) VALUES ('user:bob', 'x', 'x', 'x')`)).rejects.toThrow(
        /no actor/,
      );
    } finally {
      client.release();
    }
  });
});
