// Issue 9, defect 9: a failed insert's PostgreSQL error (detail, where, a data exception's message)
// put payload text into the worker's log. Real errors from the real server, logged as the worker does.
import { useTestDatabase } from "@porter/db/testing/test-database";
import { describe, expect, it } from "vitest";
import { createLogger } from "./logger";

const CANARY = "SECRET-CANARY-123";
const testDb = useTestDatabase();

/** The error PostgreSQL raises for `sql` with `params`. */
const errorOf = async (sql: string, params: unknown[] = []): Promise<Error> => {
  try {
    await testDb.pool.query(sql, params);
  } catch (error) {
    return error as Error;
  }
  throw new Error(`expected ${sql} to fail`);
};

describe("the worker's log carries no data a query failed on", () => {
  it("NUL in a payload, an invalid value, a check and a unique violation: codes logged, values not", async () => {
    await testDb.pool.query(`CREATE TABLE canary (k text PRIMARY KEY, v jsonb CHECK (v->>'note' <> '${CANARY}-no'))`);
    await testDb.pool.query(`INSERT INTO canary VALUES ($1, '{}')`, [CANARY]);
    const errors = [
      await errorOf(`INSERT INTO canary VALUES ('x', $1::jsonb)`, [JSON.stringify({ note: `${CANARY}\u0000` })]),
      await errorOf(`SELECT $1::uuid`, [CANARY]),
      await errorOf(`INSERT INTO canary VALUES ('y', $1::jsonb)`, [JSON.stringify({ note: `${CANARY}-no` })]),
      await errorOf(`INSERT INTO canary VALUES ($1, '{}')`, [CANARY]),
    ];
    // The raw errors do carry the canary (in detail, where or message): what this test is about.
    for (const error of errors) expect(JSON.stringify({ ...error, message: error.message })).toContain(CANARY);

    const lines: string[] = [];
    const logger = createLogger({ destination: { write: (line: string) => void lines.push(line) } });
    for (const error of errors) {
      logger.warn("could not record a result; retrying", { err: error });
      logger.error("tRPC procedure failed", { err: new Error("enqueue failed", { cause: error }) });
      logger.error(error);
    }
    const text = lines.join("");
    expect(text).not.toContain(CANARY);
    const codes = lines
      .map((line) => (JSON.parse(line) as { err: { code?: string; cause?: { code?: string } } }).err)
      .map((err) => err.code ?? err.cause?.code);
    expect(new Set(codes)).toEqual(new Set(["22P05", "22P02", "23514", "23505"]));
  });
});
