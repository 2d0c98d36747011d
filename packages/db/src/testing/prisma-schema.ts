// A small parser for the subset of Prisma's schema language that prisma/schema.prisma uses:
// models (fields, @map, @id, @unique, @db.*, @@map, @@id, @@unique, @@index) and enums (@map,
// @@map). It exists so schema-drift.int.test.ts can compare the schema with the migrated database
// without Prisma's schema engine, which cannot be downloaded here.

/** One model field. `isRelation` fields (typed with another model) have no column. */
export type PrismaField = {
  name: string;
  /** Column name: `@map("…")`, else the field name. */
  column: string;
  /** Base type: `String`, `Int`, …, an enum's or a model's name. */
  type: string;
  isList: boolean;
  isOptional: boolean;
  isRelation: boolean;
  /** `@db.Uuid` → `{ name: "Uuid", args: [] }`, `@db.Timestamptz(6)` → `{ name: "Timestamptz", args: ["6"] }`. */
  nativeType: { name: string; args: string[] } | undefined;
};

/** An index the schema declares; `fields` are field names, in order. */
export type PrismaIndex = { kind: "id" | "unique" | "index"; fields: string[] };

export type PrismaModel = {
  name: string;
  /** Table name: `@@map("…")`, else the model name. */
  table: string;
  fields: PrismaField[];
  /** From `@id`, `@unique`, `@@id`, `@@unique` and `@@index`. */
  indexes: PrismaIndex[];
};

export type PrismaEnum = {
  name: string;
  /** Type name in the database: `@@map("…")`, else the enum name. */
  dbName: string;
  /** Database labels (a value's `@map`, else its name), in declaration order. */
  values: string[];
};

export type PrismaSchema = { models: PrismaModel[]; enums: PrismaEnum[] };

type Attribute = { name: string; args: string | undefined };

/** Parses schema text; throws on a line it does not understand, naming the line. */
export function parsePrismaSchema(text: string): PrismaSchema {
  const models: PrismaModel[] = [];
  const enums: PrismaEnum[] = [];
  let block: { kind: string; model?: PrismaModel; enum?: PrismaEnum } | undefined;

  text.split(/\r?\n/).forEach((raw, index) => {
    const line = stripComment(raw).trim();
    const fail = (why: string) => new Error(`schema.prisma line ${index + 1}: ${why}: ${raw.trim()}`);
    if (line === "") return;
    if (!block) {
      const start = /^(model|enum|view|type|generator|datasource)\s+(\w+)\s*\{$/.exec(line);
      if (!start) throw fail("expected a block");
      const [, kind = "", name = ""] = start;
      block = { kind };
      if (kind === "model") {
        block.model = { name, table: name, fields: [], indexes: [] };
        models.push(block.model);
      }
      if (kind === "enum") {
        block.enum = { name, dbName: name, values: [] };
        enums.push(block.enum);
      }
      return;
    }
    if (line === "}") {
      block = undefined;
      return;
    }
    if (block.model) parseModelLine(block.model, line, fail);
    else if (block.enum) parseEnumLine(block.enum, line, fail);
  });
  if (block) throw new Error("schema.prisma: unterminated block at end of file");

  const modelNames = new Set(models.map((model) => model.name));
  for (const model of models) {
    for (const field of model.fields) field.isRelation = modelNames.has(field.type);
  }
  return { models, enums };
}

function parseModelLine(model: PrismaModel, line: string, fail: (why: string) => Error): void {
  if (line.startsWith("@@")) {
    const [attribute] = parseAttributes(line);
    if (!attribute) throw fail("unreadable block attribute");
    if (attribute.name === "@@map") {
      const table = firstString(attribute.args);
      if (!table) throw fail("@@map without a name");
      model.table = table;
    } else if (attribute.name === "@@id") model.indexes.push({ kind: "id", fields: fieldList(attribute.args) });
    else if (attribute.name === "@@unique") model.indexes.push({ kind: "unique", fields: fieldList(attribute.args) });
    else if (attribute.name === "@@index") model.indexes.push({ kind: "index", fields: fieldList(attribute.args) });
    return;
  }
  const match = /^(\w+)\s+(Unsupported\("[^"]*"\)|\w+)(\[\])?(\?)?(?:\s+(.*))?$/.exec(line);
  if (!match) throw fail("unreadable field");
  const [, name = "", type = "", list, optional, rest = ""] = match;
  const attributes = parseAttributes(rest);
  const native = attributes.find((attribute) => attribute.name.startsWith("@db."));
  const field: PrismaField = {
    name,
    column: firstString(attributes.find((attribute) => attribute.name === "@map")?.args) ?? name,
    type,
    isList: list !== undefined,
    isOptional: optional !== undefined,
    isRelation: false,
    nativeType: native ? { name: native.name.slice(4), args: splitTopLevel(native.args ?? "").filter((arg) => arg !== "") } : undefined,
  };
  model.fields.push(field);
  if (attributes.some((attribute) => attribute.name === "@id")) model.indexes.push({ kind: "id", fields: [name] });
  if (attributes.some((attribute) => attribute.name === "@unique")) {
    model.indexes.push({ kind: "unique", fields: [name] });
  }
}

function parseEnumLine(enumeration: PrismaEnum, line: string, fail: (why: string) => Error): void {
  if (line.startsWith("@@")) {
    const [attribute] = parseAttributes(line);
    if (attribute?.name === "@@map") enumeration.dbName = firstString(attribute.args) ?? enumeration.dbName;
    return;
  }
  const match = /^(\w+)(?:\s+(.*))?$/.exec(line);
  if (!match) throw fail("unreadable enum value");
  const [, name = "", rest = ""] = match;
  const mapped = parseAttributes(rest).find((attribute) => attribute.name === "@map");
  enumeration.values.push(firstString(mapped?.args) ?? name);
}

/** `@name` or `@name(args…)` occurrences, args with balanced brackets and strings kept raw. */
function parseAttributes(text: string): Attribute[] {
  const attributes: Attribute[] = [];
  let i = 0;
  while (i < text.length) {
    if (text[i] !== "@") {
      i += 1;
      continue;
    }
    const name = /^@@?[\w.]+/.exec(text.slice(i))?.[0] ?? "@";
    i += name.length;
    let args: string | undefined;
    if (text[i] === "(") {
      const end = matchingParen(text, i);
      args = text.slice(i + 1, end);
      i = end + 1;
    }
    attributes.push({ name, args });
  }
  return attributes;
}

function matchingParen(text: string, open: number): number {
  let depth = 0;
  for (let i = open; i < text.length; i++) {
    const char = text[i];
    if (char === '"') i = closingQuote(text, i);
    else if (char === "(" || char === "[") depth += 1;
    else if (char === ")" || char === "]") {
      depth -= 1;
      if (depth === 0) return i;
    }
  }
  throw new Error(`unbalanced parentheses in: ${text}`);
}

function closingQuote(text: string, open: number): number {
  for (let i = open + 1; i < text.length; i++) {
    if (text[i] === "\\") i += 1;
    else if (text[i] === '"') return i;
  }
  return text.length;
}

/** Splits on commas outside brackets and strings. */
function splitTopLevel(text: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const char = text[i];
    if (char === '"') i = closingQuote(text, i);
    else if (char === "(" || char === "[") depth += 1;
    else if (char === ")" || char === "]") depth -= 1;
    else if (char === "," && depth === 0) {
      parts.push(text.slice(start, i).trim());
      start = i + 1;
    }
  }
  parts.push(text.slice(start).trim());
  return parts;
}

function firstString(args: string | undefined): string | undefined {
  return args ? /"((?:[^"\\]|\\.)*)"/.exec(args)?.[1] : undefined;
}

/** `[a, b(sort: Desc)], map: "x"` or `fields: [a, b]` → `["a", "b"]`. */
function fieldList(args: string | undefined): string[] {
  const list = /\[([^\]]*)\]/.exec(args ?? "")?.[1] ?? "";
  return splitTopLevel(list)
    .map((item) => /^\w+/.exec(item)?.[0] ?? "")
    .filter((item) => item !== "");
}

/** Removes a `//` comment (including `///` doc comments) that is not inside a string. */
function stripComment(line: string): string {
  for (let i = 0; i < line.length; i++) {
    if (line[i] === '"') i = closingQuote(line, i);
    else if (line[i] === "/" && line[i + 1] === "/") return line.slice(0, i);
  }
  return line;
}
