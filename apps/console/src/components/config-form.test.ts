// The control-plane model is declared once (@porter/contracts/control-plane); this checks that
// every consumer derives from it: the API's create/update/row schemas, core's writable columns and
// Prisma fields, and the console's forms. A field added to a declaration and missed by one of them
// fails here.

import * as api from "@porter/api/schemas/control-plane";
import { CONTROL_PLANE, type ConfigObjectType, createDefaults, type EntityDecl, type FieldDecl } from "@porter/contracts/control-plane";
import { CONFIG_TABLES, prismaField } from "@porter/core";
import { Prisma } from "@porter/db/prisma";
import { describe, expect, it } from "vitest";
import type { z } from "zod";
import { entityFields } from "./config-form";

const SCHEMAS: Record<ConfigObjectType, { create: z.ZodType; update: z.ZodType; fields: z.ZodType; row: z.ZodType; prisma: Record<string, string> }> = {
  pool: { create: api.ZPoolCreate, update: api.ZPoolUpdate, fields: api.ZPoolFields, row: api.ZPoolRow, prisma: Prisma.PoolScalarFieldEnum },
  resource_key: {
    create: api.ZResourceKeyCreate,
    update: api.ZResourceKeyUpdate,
    fields: api.ZResourceKeyFields,
    row: api.ZResourceKeyRow,
    prisma: Prisma.ResourceKeyScalarFieldEnum,
  },
  queue: { create: api.ZQueueCreate, update: api.ZQueueUpdate, fields: api.ZQueueFields, row: api.ZQueueRow, prisma: Prisma.QueueScalarFieldEnum },
  job_type: { create: api.ZJobTypeCreate, update: api.ZJobTypeUpdate, fields: api.ZJobTypeFields, row: api.ZJobTypeRow, prisma: Prisma.JobTypeScalarFieldEnum },
  tenant: { create: api.ZTenantCreate, update: api.ZTenantUpdate, fields: api.ZTenantFields, row: api.ZTenantRow, prisma: Prisma.TenantScalarFieldEnum },
};

/** A valid value of a field (its default, or the lowest bound, or a reference id). */
const sample = (f: FieldDecl): unknown => {
  if (f.default !== null) return f.default;
  if (f.kind === "int") return f.min;
  if (f.kind === "rate") return 1.5;
  if (f.kind === "ref") return "some_id";
  if (f.kind === "enum") return f.options[0]!.value;
  if (f.kind === "color") return "#112233";
  return "";
};
const required = (e: EntityDecl) =>
  Object.fromEntries(
    Object.entries(e.fields)
      .filter(([, f]) => f.kind === "ref" && !f.isNullable)
      .map(([k]) => [k, "some_id"]),
  );

describe.each(Object.entries(CONTROL_PLANE) as Array<[ConfigObjectType, EntityDecl]>)("the %s declaration", (type, entity) => {
  const names = Object.keys(entity.fields);
  const schemas = SCHEMAS[type];

  it("is the create schema: every field, absent ones at their declared default", () => {
    const parsed = schemas.create.parse({ id: "x1", ...required(entity) }) as Record<string, unknown>;
    expect(Object.keys(parsed).sort()).toEqual(["id", ...names].sort());
    for (const [name, f] of Object.entries(entity.fields)) if (!(f.kind === "ref" && !f.isNullable)) expect(parsed[name], name).toEqual(f.default);
    expect(schemas.fields.parse(required(entity))).toEqual(Object.fromEntries(Object.entries(parsed).filter(([k]) => k !== "id")));
  });

  it("is the update schema: each field alone is a valid patch, an undeclared one is refused", () => {
    for (const [name, f] of Object.entries(entity.fields))
      expect(schemas.update.safeParse({ id: "x1", patch: { [name]: sample(f) } }).success, name).toBe(true);
    expect(schemas.update.safeParse({ id: "x1", patch: { not_a_field: 1 } }).success).toBe(false);
  });

  it("holds the bounds: one past either end of a whole-number field is refused by create and update", () => {
    for (const [name, f] of Object.entries(entity.fields)) {
      if (f.kind !== "int") continue;
      for (const bad of [f.min - 1, f.max + 1, f.min + 0.5]) {
        expect(schemas.create.safeParse({ id: "x1", ...required(entity), [name]: bad }).success, `${name}=${bad}`).toBe(false);
        expect(schemas.update.safeParse({ id: "x1", patch: { [name]: bad } }).success, `${name}=${bad}`).toBe(false);
      }
      if (!("isNullable" in f && f.isNullable)) expect(schemas.update.safeParse({ id: "x1", patch: { [name]: null } }).success, `${name}=null`).toBe(false);
    }
  });

  it("is the row schema: a row of samples with state and stamps passes, one without a field does not", () => {
    const state = Object.fromEntries(Object.entries(entity.state ?? {}).map(([k, s]) => [k, s.kind === "boolean" ? false : null]));
    const row = { id: "x1", ...Object.fromEntries(Object.entries(entity.fields).map(([k, f]) => [k, sample(f)])), ...state, created_at: "t", updated_at: "t" };
    expect(schemas.row.safeParse(row).success).toBe(true);
    for (const name of names) expect(schemas.row.safeParse({ ...row, [name]: undefined }).success, name).toBe(false);
  });

  it("is core's writable columns and read-only state, each a field of the Prisma model", () => {
    expect(CONFIG_TABLES[type].columns).toEqual(names);
    expect(CONFIG_TABLES[type].readOnly).toEqual(Object.keys(entity.state ?? {}));
    for (const column of ["id", ...names, ...Object.keys(entity.state ?? {}), "created_at", "updated_at"]) {
      expect(Object.values(schemas.prisma), column).toContain(prismaField(column));
    }
  });

  it("is the console's form: the id, then every field with its label, help and unit", () => {
    const specs = entityFields(entity);
    expect(specs.map((s) => s.name)).toEqual(["id", ...names]);
    for (const spec of specs.slice(1)) {
      const f = entity.fields[spec.name]!;
      expect(spec.label).toBe(f.label);
      expect(spec.help).toBe(f.help);
      expect(spec.unit).toBe(f.unit);
      expect(Boolean(spec.isNullable)).toBe("isNullable" in f && Boolean(f.isNullable));
    }
    // The create form starts from the declared defaults, and they pass the create schema.
    expect(schemas.create.safeParse({ id: "x1", ...createDefaults(entity), ...required(entity) }).success).toBe(true);
  });
});

describe("cross-field rules", () => {
  it("refuse a queue whose default exceeds its ceiling, on create and in the edit form", () => {
    const input = { id: "q", pool_id: "p", default_priority: 90, max_priority: 80 };
    const issues = api.ZQueueCreate.safeParse(input).error?.issues ?? [];
    expect(issues.map((i) => i.path.join("."))).toEqual(["default_priority"]);
    expect(api.ZQueueFields.safeParse({ pool_id: "p", default_max_attempts: 30 }).success).toBe(false);
  });
});
