import { useTestDatabase } from "@porter/db/testing/test-database";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { integerArray, textArray } from "./array-literal";

const db = useTestDatabase();

// What PostgreSQL can store as text (no NUL), weighted towards what the literal's grammar gives a
// meaning to: quotes, backslashes, braces, commas, blanks, the word NULL.
const storable = fc
  .array(
    fc.oneof(
      fc.constantFrom('"', "\\", "{", "}", ",", " ", "NULL", "null", "\t", "é", "😀"),
      fc.string({ maxLength: 3 }).filter((s) => !s.includes("\u0000")),
    ),
    {
      maxLength: 8,
    },
  )
  .map((parts) => parts.join(""));

describe("array literals, read by PostgreSQL", () => {
  it("a text array literal is its elements, in order, nulls included", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.option(storable, { nil: null }), { maxLength: 20 }), async (values) => {
        const { rows } = await db.pool.query<{ a: Array<string | null> }>("SELECT $1::text[] AS a", [textArray(values, (v) => v)]);
        expect(rows[0]!.a).toEqual(values);
      }),
      { numRuns: 200 },
    );
  });

  it("a bigint array literal is its integers", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }), { maxLength: 20 }), async (values) => {
        const { rows } = await db.pool.query<{ a: string[] }>("SELECT $1::bigint[]::text[] AS a", [integerArray(values, (v) => v.toString())]);
        expect(rows[0]!.a).toEqual(values.map(String));
      }),
      { numRuns: 100 },
    );
  });
});
