import fc from "fast-check";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { inClaimOrder, parseTimestamptz } from "./claim-jobs";

const pgParse = pg.types.getTypeParser(1184, "text") as (text: string) => Date;
const pad = (n: number, width: number) => String(n).padStart(width, "0");

/** A timestamptz as PostgreSQL's ISO DateStyle prints it in a session whose zone is `offsetMin` east. */
const printed = (utcMs: number, micros: number, fractionDigits: number, offsetMin: number, offsetStyle: "hh" | "hh:mm"): string => {
  const local = new Date(utcMs + offsetMin * 60_000);
  const fraction = fractionDigits === 0 ? "" : `.${pad(local.getUTCMilliseconds() * 1000 + micros, 6).slice(0, fractionDigits)}`;
  const abs = Math.abs(offsetMin);
  const offset = `${offsetMin < 0 ? "-" : "+"}${pad(Math.floor(abs / 60), 2)}${offsetStyle === "hh:mm" || abs % 60 ? `:${pad(abs % 60, 2)}` : ""}`;
  return `${pad(local.getUTCFullYear(), 4)}-${pad(local.getUTCMonth() + 1, 2)}-${pad(local.getUTCDate(), 2)} ${pad(local.getUTCHours(), 2)}:${pad(local.getUTCMinutes(), 2)}:${pad(local.getUTCSeconds(), 2)}${fraction}${offset}`;
};

describe("parseTimestamptz", () => {
  it("reads what PostgreSQL prints exactly as pg's parser does", () => {
    const samples = [
      "2026-11-30 10:50:22.123456+00",
      "2026-11-30 10:50:22+00",
      "2026-11-30 10:50:22.1+05:30",
      "2026-11-30 23:59:59.999-03",
      "1999-12-31 00:00:00.5+00",
      "2026-02-28 12:00:00.000001+14",
      "2026-02-28 12:00:00.000001+0530",
    ];
    for (const text of samples) expect(parseTimestamptz(text).getTime(), text).toBe(pgParse(text).getTime());
  });

  it("agrees with pg's parser on any instant, fraction and offset (property)", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: Date.UTC(100, 0, 2), max: Date.UTC(9999, 11, 30) }),
        fc.integer({ min: 0, max: 999 }),
        fc.integer({ min: 0, max: 6 }),
        fc.integer({ min: -15 * 60 - 59, max: 15 * 60 + 59 }),
        fc.constantFrom("hh" as const, "hh:mm" as const),
        (utcMs, micros, digits, offsetMin, style) => {
          const text = printed(utcMs, micros, digits, offsetMin, style);
          expect(parseTimestamptz(text).getTime(), text).toBe(pgParse(text).getTime());
        },
      ),
      { numRuns: 2000 },
    );
  });

  it("hands anything else to pg's parser", () => {
    expect(parseTimestamptz("infinity")).toBe(pgParse("infinity"));
    expect(parseTimestamptz("0044-03-15 12:00:00+00 BC").getTime()).toBe(pgParse("0044-03-15 12:00:00+00 BC").getTime());
    // Years before 100 (Date.UTC would read 0044 as 1944), offsets with seconds (historical zones).
    expect(parseTimestamptz("0044-03-15 12:00:00+00").getTime()).toBe(pgParse("0044-03-15 12:00:00+00").getTime());
    expect(parseTimestamptz("1890-01-01 00:00:00+00:09:21").getTime()).toBe(pgParse("1890-01-01 00:00:00+00:09:21").getTime());
    // Not digits where digits belong: pg's parser decides (its result, whatever it is).
    expect(parseTimestamptz("2026-1x-30 10:50:22+00")).toEqual(pgParse("2026-1x-30 10:50:22+00"));
  });
});

describe("inClaimOrder", () => {
  it("puts rows in any order back into claim order (property)", () => {
    fc.assert(
      fc.property(fc.uniqueArray(fc.integer({ min: 1, max: 5000 }), { maxLength: 600 }), (places) => {
        const rows = places.map((place) => ["job", place] as [string, number]);
        const sorted = inClaimOrder([...rows], 1).map((r) => r[1]);
        expect(sorted).toEqual([...places].sort((a, b) => a - b));
      }),
    );
  });

  it("leaves rows already in claim order as they are (no copy, no sort)", () => {
    const rows = [
      ["a", 1],
      ["b", 2],
      ["c", 3],
    ] as Array<[string, number]>;
    expect(inClaimOrder(rows, 1)).toBe(rows);
    expect(inClaimOrder(rows, 1).map((r) => r[0])).toEqual(["a", "b", "c"]);
  });
});
