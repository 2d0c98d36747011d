import { verifyPassword } from "@porter/core";
import { createTestDatabase, type TestDatabase } from "@porter/db/testing/test-database";
import { afterEach, describe, expect, it } from "vitest";
import { DEMO_ALERT_RULES, DEMO_JOB_TYPES, DEMO_POOLS, DEMO_QUEUES, DEMO_TENANTS, seedDemo } from "../seed/demo";

// Each test gets an empty control plane of its own (a fresh clone of the migrated template).
const databases: TestDatabase[] = [];
const freshDatabase = async () => {
  const db = await createTestDatabase({ label: "seed" });
  databases.push(db);
  return db;
};
afterEach(async () => {
  await Promise.all(databases.splice(0).map((db) => db.drop()));
});

const count = async (db: TestDatabase, table: string) => Number((await db.pool.query<{ n: string }>(`SELECT count(*)::text AS n FROM ${table}`)).rows[0]!.n);

describe("seedDemo", () => {
  it("[SEED]: two concurrent seeders write the demo configuration exactly once", async () => {
    const db = await freshDatabase();
    const results = await Promise.all([1, 2].map(() => seedDemo(db.appPrisma, { actor: "seed", adminEmail: "Ops@Example.com" })));
    expect(results.map((r) => r.created).sort()).toEqual([false, true]);
    const winner = results.find((r) => r.created)!;
    expect(winner).toMatchObject({ adminEmail: "ops@example.com", adminCreated: true });
    expect(winner.adminPassword).toBeDefined();
    expect(winner.producerKey).toBeDefined();
    expect(await count(db, "pools")).toBe(DEMO_POOLS.length);
    expect(await count(db, "queues")).toBe(DEMO_QUEUES.length);
    expect(await count(db, "job_types")).toBe(DEMO_JOB_TYPES.length);
    expect(await count(db, "tenants")).toBe(DEMO_TENANTS.length);
    expect(await count(db, "users")).toBe(1);
    expect(await count(db, "api_keys")).toBe(1);
    // The demo's DLQ alert rules: global, more than 10 deaths in 5 minutes and a group reopened within the hour.
    const rules = await db.pool.query(`SELECT queue_id, kind, threshold, enabled FROM alert_rules ORDER BY kind`);
    expect(rules.rows).toEqual([...DEMO_ALERT_RULES].sort((a, b) => a.kind.localeCompare(b.kind)));
    const seedAudit = await db.pool.query(`SELECT after FROM audit_log WHERE action = 'seed.demo'`);
    expect(seedAudit.rows).toHaveLength(1);
    expect(seedAudit.rows[0].after.inserted).toContain("queue:diag");
  });

  it("[SEED]: a given admin password is used and never returned; an existing admin is not touched", async () => {
    const db = await freshDatabase();
    await db.pool.query(`INSERT INTO users (id, email, password_hash, role) VALUES ('u1', 'other@porter.local', 'x', 'viewer')`);
    const result = await seedDemo(db.appPrisma, { actor: "seed", adminEmail: "admin@porter.local", adminPassword: "correct horse battery" });
    expect(result).toMatchObject({ created: true, adminCreated: true });
    expect(result.adminPassword).toBeUndefined();
    const hash = (await db.pool.query(`SELECT password_hash FROM users WHERE email = 'admin@porter.local'`)).rows[0].password_hash;
    expect(await verifyPassword(hash, "correct horse battery")).toBe(true);

    // Forced on a configured database: only missing rows come back; the admin and keys stay.
    await db.pool.query(`DELETE FROM tenants WHERE id = 'tenant_C'`);
    await db.pool.query(`UPDATE queues SET lease_seconds = 42 WHERE id = 'diag'`);
    expect(await seedDemo(db.appPrisma, { actor: "seed", adminEmail: "admin@porter.local" })).toMatchObject({ created: false });
    expect(await count(db, "tenants")).toBe(2);
    const forced = await seedDemo(db.appPrisma, { actor: "seed", adminEmail: "admin@porter.local", adminPassword: "another password", force: true });
    expect(forced).toEqual({ created: true, adminEmail: "admin@porter.local", adminCreated: false });
    expect((await db.pool.query(`SELECT weight FROM tenants WHERE id = 'tenant_C'`)).rows[0].weight).toBe(2);
    expect((await db.pool.query(`SELECT lease_seconds FROM queues WHERE id = 'diag'`)).rows[0].lease_seconds).toBe(42);
    const sameHash = (await db.pool.query(`SELECT password_hash FROM users WHERE email = 'admin@porter.local'`)).rows[0].password_hash;
    expect(sameHash).toBe(hash);
    expect(await count(db, "api_keys")).toBe(1);
    expect(await seedDemo(db.appPrisma, { actor: "seed", adminEmail: "admin@porter.local", force: true })).toMatchObject({ created: false });
  });

  it("[SEED]: nothing is written when the control plane already has a configuration", async () => {
    const db = await freshDatabase();
    await db.pool.query(`INSERT INTO pools (id) VALUES ('mine')`);
    expect(await seedDemo(db.appPrisma, { actor: "seed", adminEmail: "admin@porter.local" })).toEqual({
      created: false,
      adminEmail: "admin@porter.local",
      adminCreated: false,
    });
    expect(await count(db, "pools")).toBe(1);
    expect(await count(db, "users")).toBe(0);
    expect(await count(db, "api_keys")).toBe(0);
    expect(await count(db, "audit_log")).toBe(0);
  });
});
