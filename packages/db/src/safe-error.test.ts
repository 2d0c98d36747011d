import pg from "pg";
import { describe, expect, it } from "vitest";
import { createLogger } from "./logger";
import { isSafeError, safeErrorMessage, serializeError } from "./safe-error";

const CANARY = "SECRET-CANARY-123";

/** A DatabaseError as node-postgres builds it from the server's ErrorResponse (fields as observed on PostgreSQL 15). */
const pgError = (fields: Record<string, string | undefined> & { message: string; code: string }): Error => {
  const error = new pg.DatabaseError(fields.message, 200, "error");
  const all = {
    severity: "ERROR",
    detail: undefined,
    hint: undefined,
    position: undefined,
    internalPosition: undefined,
    internalQuery: undefined,
    where: undefined,
    schema: undefined,
    table: undefined,
    column: undefined,
    dataType: undefined,
    constraint: undefined,
    file: "jsonfuncs.c",
    line: "621",
    routine: "json_ereport_error",
    ...fields,
  };
  delete (all as Record<string, unknown>).message;
  return Object.assign(error, all);
};

const nulInJson = () =>
  pgError({
    code: "22P05",
    message: "unsupported Unicode escape sequence",
    detail: "\\u0000 cannot be converted to text.",
    where: `JSON data, line 1: {"note":"${CANARY}\\u0000...\nunnamed portal parameter $1 = '...'`,
  });
const badUuid = () =>
  pgError({
    code: "22P02",
    message: `invalid input syntax for type uuid: "${CANARY}"`,
    where: "unnamed portal parameter $1 = '...'",
    routine: "string_to_uuid",
  });
const checkViolation = () =>
  pgError({
    code: "23514",
    message: 'new row for relation "jobs" violates check constraint "jobs_payload_check"',
    detail: `Failing row contains (1, {"note": "${CANARY}"}).`,
    schema: "public",
    table: "jobs",
    constraint: "jobs_payload_check",
    routine: "ExecConstraints",
  });
const uniqueViolation = () =>
  pgError({
    code: "23505",
    message: 'duplicate key value violates unique constraint "jobs_idempotency_key"',
    detail: `Key (tenant_id, idempotency_key)=(tenant_A, ${CANARY}) already exists.`,
    hint: `try another key than ${CANARY}`,
    internalQuery: `SELECT '${CANARY}'`,
    table: "jobs",
    constraint: "jobs_idempotency_key",
  });

/** Every line a logger writes, as text. */
const capture = () => {
  const lines: string[] = [];
  const logger = createLogger({ name: "test", level: "debug", destination: { write: (line: string) => void lines.push(line) } });
  return { logger, text: () => lines.join(""), records: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>) };
};

describe("serializeError: what of an error a log may carry", () => {
  it.each([
    ["NUL in a JSON payload (detail, where)", nulInJson],
    ["a data exception quoting the value in its message", badUuid],
    ["a check violation (the failing row in detail)", checkViolation],
    ["a unique violation (key in detail, hint, internalQuery)", uniqueViolation],
  ])("%s: no trace of the value, the kind of failure kept", (_, make) => {
    const error = make();
    const safe = serializeError(error) as Record<string, unknown>;
    expect(JSON.stringify(safe)).not.toContain(CANARY);
    expect(safe).toMatchObject({ type: "DatabaseError", code: (error as unknown as { code: string }).code, severity: "ERROR" });
    expect(typeof safe.stack).toBe("string");
    for (const field of ["detail", "where", "hint", "internalQuery"]) expect(safe).not.toHaveProperty(field);
  });

  it("keeps object names and says which fields it left out", () => {
    const safe = serializeError(uniqueViolation()) as Record<string, unknown>;
    expect(safe).toMatchObject({
      message: 'duplicate key value violates unique constraint "jobs_idempotency_key"',
      table: "jobs",
      constraint: "jobs_idempotency_key",
    });
    expect(safe.omitted).toEqual(expect.arrayContaining(["detail", "hint", "internalQuery"]));
  });

  it("masks the quoted value of a data exception but not the names of a syntax error", () => {
    expect(safeErrorMessage(badUuid())).toBe('invalid input syntax for type uuid: "[redacted]"');
    const syntax = pgError({ code: "42P01", message: 'relation "jobz" does not exist' });
    expect(safeErrorMessage(syntax)).toBe('relation "jobz" does not exist');
    // The stack begins with the message: the raw one is gone from there too.
    expect((serializeError(badUuid()) as { stack: string }).stack).toMatch(/^error: invalid input syntax for type uuid: "\[redacted\]"/);
  });

  it("follows causes and aggregated errors (tRPC → AppError → pg), with the same rules", () => {
    const wrapped = new Error("tRPC procedure failed", { cause: new Error("enqueue failed", { cause: nulInJson() }) });
    const aggregate = new AggregateError([badUuid(), checkViolation()], "batch failed");
    for (const error of [wrapped, aggregate]) {
      const safe = serializeError(error);
      expect(JSON.stringify(safe)).not.toContain(CANARY);
    }
    expect((serializeError(wrapped) as { cause: { cause: { code: string } } }).cause.cause.code).toBe("22P05");
    expect((serializeError(aggregate) as { errors: unknown[] }).errors).toHaveLength(2);
  });

  it("drops the data fields of other errors too (an AppError's details, Prisma's meta)", () => {
    const app = Object.assign(new Error("conflict"), { name: "AppError", code: "CONFLICT", details: { payload: { note: CANARY } } });
    const prisma = Object.assign(new Error(`Raw query failed. Code: \`22P02\`. Message: \`invalid input syntax for type uuid: "${CANARY}"\``), {
      name: "PrismaClientKnownRequestError",
      code: "P2010",
      meta: { message: CANARY },
      clientVersion: "7.10.0",
    });
    for (const error of [app, prisma]) expect(JSON.stringify(serializeError(error))).not.toContain(CANARY);
    expect(serializeError(prisma)).toMatchObject({ code: "P2010", clientVersion: "7.10.0" });
  });

  it("is idempotent and leaves what is not an error alone", () => {
    const once = serializeError(badUuid());
    expect(isSafeError(once)).toBe(true);
    expect(serializeError(once)).toBe(once);
    expect(serializeError("a string")).toBe("a string");
    expect(serializeError(undefined)).toBe(undefined);
  });
});

describe("createLogger: one logger setup for every process", () => {
  it("an error under any key, at any of a few levels, is serialized safely", () => {
    const { logger, text, records } = capture();
    logger.error("tRPC procedure failed", { err: nulInJson() });
    logger.warn("could not record a result; retrying", { error: checkViolation() });
    logger.error("next-auth error", { code: "X", metadata: { error: uniqueViolation(), errors: [badUuid()] } });
    logger.error(badUuid()); // pino's own (error) form
    expect(text()).not.toContain(CANARY);
    const [first] = records();
    expect(first).toMatchObject({ msg: "tRPC procedure failed", err: { type: "DatabaseError", code: "22P05" } });
  });

  it("credentials and payloads are redacted wherever a caller puts them", () => {
    const { logger, text, records } = capture();
    logger.info("careless call", {
      password: CANARY,
      payload: { note: CANARY },
      job: { payload: CANARY, token: CANARY },
      headers: { authorization: `Bearer ${CANARY}` },
    });
    expect(text()).not.toContain(CANARY);
    expect(records()[0]).toMatchObject({ msg: "careless call", password: "[redacted]", job: { payload: "[redacted]" } });
  });

  it("keeps house style: message first, fields after; plain fields untouched", () => {
    const { logger, records } = capture();
    logger.info("claimed jobs", { n: 3, when: "now", nested: { message: "not an error" } });
    expect(records()[0]).toMatchObject({ msg: "claimed jobs", n: 3, when: "now", nested: { message: "not an error" }, name: "test" });
  });
});
