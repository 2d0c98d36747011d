import { readFile } from "node:fs/promises";
import { describe, expect, it } from "vitest";
import { parsePrismaSchema } from "./prisma-schema";
import { type DatabaseSchema, diffSchema } from "./schema-drift";

// A schema in the style of prisma/schema.prisma, and the database it describes.
const schemaText = `
// comment with "quotes" and { braces }
generator client {
  provider = "prisma-client" // trailing comment
}

/// Doc comment
enum Color {
  RED
  GREEN @map("green")

  @@map("color")
}

model Owner {
  id    String @id @db.Uuid
  url   String @default("http://example.com/a//b") @map("home_url")
  items Item[]

  @@map("owners")
}

model Item {
  id        BigInt    @id @default(autoincrement())
  ownerId   String    @map("owner_id") @db.Uuid
  color     Color
  tags      String[]  @default([])
  price     Float?
  payload   Json
  isActive  Boolean   @default(true) @map("is_active")
  count     Int       @default(0)
  createdAt DateTime  @default(now()) @map("created_at") @db.Timestamptz(6)
  owner     Owner     @relation(fields: [ownerId], references: [id])

  @@unique([ownerId, color], map: "items_owner_color_key")
  @@index([createdAt(sort: Desc), ownerId])
  @@map("items")
}
`;

function database(): DatabaseSchema {
  return {
    tables: [
      {
        name: "owners",
        columns: [
          { name: "id", type: "uuid", isNullable: false },
          { name: "home_url", type: "text", isNullable: false },
        ],
        indexes: [{ name: "owners_pkey", columns: ["id"], isUnique: true, isPrimary: true, isPartial: false }],
      },
      {
        name: "items",
        columns: [
          { name: "id", type: "bigint", isNullable: false },
          { name: "owner_id", type: "uuid", isNullable: false },
          { name: "color", type: "color", isNullable: false },
          { name: "tags", type: "text[]", isNullable: false },
          { name: "price", type: "double precision", isNullable: true },
          { name: "payload", type: "jsonb", isNullable: false },
          { name: "is_active", type: "boolean", isNullable: false },
          { name: "count", type: "integer", isNullable: false },
          { name: "created_at", type: "timestamp(6) with time zone", isNullable: false },
        ],
        indexes: [
          { name: "items_pkey", columns: ["id"], isUnique: true, isPrimary: true, isPartial: false },
          { name: "items_owner_color_key", columns: ["owner_id", "color"], isUnique: true, isPrimary: false, isPartial: false },
          { name: "items_created_at_owner_id_idx", columns: ["created_at", "owner_id"], isUnique: false, isPrimary: false, isPartial: false },
        ],
      },
    ],
    enums: [{ name: "color", labels: ["RED", "green"] }],
  };
}

describe("parsePrismaSchema", () => {
  it("reads models, mapped names, field shapes, native types, indexes and enums", () => {
    const schema = parsePrismaSchema(schemaText);
    expect(schema.enums).toEqual([{ name: "Color", dbName: "color", values: ["RED", "green"] }]);
    expect(schema.models.map((model) => [model.name, model.table])).toEqual([
      ["Owner", "owners"],
      ["Item", "items"],
    ]);
    const [owner, item] = schema.models;
    expect(owner?.fields.find((field) => field.name === "url")?.column).toBe("home_url");
    expect(owner?.fields.find((field) => field.name === "items")).toMatchObject({ isRelation: true, isList: true });
    expect(item?.fields.find((field) => field.name === "owner")).toMatchObject({ isRelation: true, type: "Owner" });
    expect(item?.fields.find((field) => field.name === "tags")).toMatchObject({ isList: true, isOptional: false });
    expect(item?.fields.find((field) => field.name === "price")).toMatchObject({ isOptional: true, isRelation: false });
    expect(item?.fields.find((field) => field.name === "createdAt")?.nativeType).toEqual({ name: "Timestamptz", args: ["6"] });
    expect(item?.indexes).toEqual([
      { kind: "id", fields: ["id"] },
      { kind: "unique", fields: ["ownerId", "color"] },
      { kind: "index", fields: ["createdAt", "ownerId"] },
    ]);
  });

  it("reads the repository's schema.prisma", async () => {
    const text = await readFile(new URL("../../../../prisma/schema.prisma", import.meta.url), "utf8");
    const schema = parsePrismaSchema(text);
    const job = schema.models.find((model) => model.name === "Job");
    expect(job?.table).toBe("jobs");
    expect(job?.fields.find((field) => field.name === "jobId")).toMatchObject({ column: "job_id", nativeType: { name: "Uuid", args: [] } });
    expect(schema.enums.find((enumeration) => enumeration.name === "JobState")?.dbName).toBe("job_state");
    expect(schema.models.find((model) => model.name === "Queue")?.fields.find((field) => field.name === "pool")?.isRelation).toBe(true);
  });

  it("names the line it cannot read", () => {
    expect(() => parsePrismaSchema("model A {\n  id String @id\n  ??? nonsense\n}")).toThrow(/line 3/);
  });
});

describe("diffSchema", () => {
  it("finds nothing when schema and database agree", () => {
    expect(diffSchema(parsePrismaSchema(schemaText), database())).toEqual([]);
  });

  it("reports a deliberately drifted schema", () => {
    const drifted = schemaText
      .replace("  count     Int       @default(0)\n", "  count     Int       @default(0)\n  note      String?\n") // missing column
      .replace("price     Float?", "price     Float") // nullability
      .replace('ownerId   String    @map("owner_id") @db.Uuid', 'ownerId   String    @map("owner_id")') // type
      .replace('@map("created_at") @db.Timestamptz(6)', '@map("created_at")') // DateTime without timestamptz
      .replace("  RED\n", "  RED\n  BLUE\n") // enum label
      .replace("@@index([createdAt(sort: Desc), ownerId])", "@@index([ownerId, createdAt])"); // index columns
    expect(diffSchema(parsePrismaSchema(drifted), database())).toEqual([
      "column items.owner_id (Item.ownerId) has type uuid in the database, the schema says text",
      "column items.price (Item.price) is nullable in the database, the schema says required (NOT NULL)",
      "column items.note (Item.note) is missing in the database",
      "column items.created_at (Item.createdAt): DateTime must be declared @db.Timestamptz (every Porter timestamp is timestamptz), found no @db attribute",
      "index on items (owner_id, created_at) is missing in the database",
      "enum type color has labels [RED, green] in the database, the schema says [RED, BLUE, green]",
    ]);
  });

  it("reports a drifted database", () => {
    const db = database();
    const items = db.tables[1]!;
    items.columns.push({ name: "extra", type: "text", isNullable: true });
    items.columns = items.columns.map((column) => (column.name === "tags" ? { ...column, type: "character varying[]" } : column));
    items.indexes = items.indexes.map((index) => (index.name === "items_owner_color_key" ? { ...index, isUnique: false } : index));
    db.tables[0]!.indexes = [];
    db.tables.push({ name: "orphans", columns: [], indexes: [] });
    db.tables.push({ name: "_ledger_is_not_filtered_here", columns: [], indexes: [] });
    db.enums.push({ name: "size", labels: ["S"] });
    expect(diffSchema(parsePrismaSchema(schemaText), db)).toEqual([
      "primary key on owners (id) is missing in the database",
      "column items.tags (Item.tags) has type character varying[] in the database, the schema says text[]",
      "column items.extra exists in the database but not in model Item",
      "unique index on items (owner_id, color) is missing in the database",
      "table orphans exists in the database but has no model",
      "table _ledger_is_not_filtered_here exists in the database but has no model",
      "enum type size exists in the database but not in the schema",
    ]);
  });

  it("accepts a partial index only when the schema has none for those columns", () => {
    const db = database();
    const items = db.tables[1]!;
    items.indexes = items.indexes.map((index) => (index.name === "items_created_at_owner_id_idx" ? { ...index, isPartial: true } : index));
    expect(diffSchema(parsePrismaSchema(schemaText), db)).toEqual(["index on items (created_at, owner_id) is missing in the database"]);
  });
});
