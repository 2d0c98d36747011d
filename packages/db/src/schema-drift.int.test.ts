// prisma/schema.prisma and the SQL migrations describe the same database twice; this file fails
// when they disagree. A failure lists each difference; fix the schema or add a migration.
import { readFile } from "node:fs/promises";
import { describe, expect, it } from "vitest";
import { parsePrismaSchema } from "./testing/prisma-schema";
import { diffSchema, readDatabaseSchema } from "./testing/schema-drift";
import { useTestDatabase } from "./testing/test-database";

const schemaPath = new URL("../../../prisma/schema.prisma", import.meta.url);
const db = useTestDatabase();

describe("schema.prisma vs the migrated database", () => {
  it("agree on tables, columns, types, nullability, enums and indexes", async () => {
    const schema = parsePrismaSchema(await readFile(schemaPath, "utf8"));
    const database = await readDatabaseSchema(db.pool);

    // Not vacuous: every model maps to a table that exists and was compared.
    expect(schema.models.length).toBeGreaterThanOrEqual(16);
    expect(database.tables.map((table) => table.name).sort()).toEqual(schema.models.map((model) => model.table).sort());
    expect(diffSchema(schema, database)).toEqual([]);
  });

  it("reports a schema that drifted from the database", async () => {
    const text = (await readFile(schemaPath, "utf8"))
      .replace("leaseOwner        String?", "leaseOwner        String")
      .replace('\n\n  @@map("jobs")', '\n  shard Int @map("shard")\n\n  @@map("jobs")')
      .replace("  operator\n  admin\n", "  operator\n  owner\n  admin\n")
      .replace('idempotencyKey String   @map("idempotency_key")\n  jobId ', 'idempotencyKey String   @map("idempotency_key") @db.Uuid\n  jobId ')
      .replace("@@index([at])", "@@index([at, actor])");
    const problems = diffSchema(parsePrismaSchema(text), await readDatabaseSchema(db.pool));

    expect(problems).toEqual([
      "column jobs.lease_owner (Job.leaseOwner) is nullable in the database, the schema says required (NOT NULL)",
      "column jobs.shard (Job.shard) is missing in the database",
      "column idempotency_keys.idempotency_key (IdempotencyKey.idempotencyKey) has type text in the database, the schema says uuid",
      "index on audit_log (at, actor) is missing in the database",
      "enum type role has labels [viewer, operator, admin] in the database, the schema says [viewer, operator, owner, admin]",
    ]);
  });

  it("reports a database that drifted from the schema", async () => {
    await db.pool.query(`
      ALTER TABLE jobs ADD COLUMN surprise integer;
      ALTER TABLE workers ALTER COLUMN host DROP NOT NULL;
      DROP INDEX audit_log_at_idx;
      ALTER TABLE diag_effects DROP CONSTRAINT diag_effects_pkey;
      CREATE TABLE stray (id int);
      CREATE TYPE mood AS ENUM ('calm');
    `);
    const schema = parsePrismaSchema(await readFile(schemaPath, "utf8"));
    const problems = diffSchema(schema, await readDatabaseSchema(db.pool));

    expect(problems).toEqual([
      "column jobs.surprise exists in the database but not in model Job",
      "primary key on diag_effects (key) is missing in the database",
      "index on audit_log (at) is missing in the database",
      "column workers.host (Worker.host) is nullable in the database, the schema says required (NOT NULL)",
      "table stray exists in the database but has no model",
      "enum type mood exists in the database but not in the schema",
    ]);
  });
});
