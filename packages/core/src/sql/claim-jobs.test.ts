import pg from "pg";
import { describe, expect, it } from "vitest";
import { parseTimestamptz } from "./claim-jobs";

const pgParse = pg.types.getTypeParser(1184, "text") as (text: string) => Date;

describe("parseTimestamptz", () => {
  it("reads what PostgreSQL prints exactly as pg's parser does", () => {
    const samples = [
      "2026-11-30 10:50:22.123456+00",
      "2026-11-30 10:50:22+00",
      "2026-11-30 10:50:22.1+05:30",
      "2026-11-30 23:59:59.999-03",
      "1999-12-31 00:00:00.5+00",
      "2026-02-28 12:00:00.000001+14",
    ];
    for (const text of samples) expect(parseTimestamptz(text).getTime(), text).toBe(pgParse(text).getTime());
  });

  it("hands anything else to pg's parser", () => {
    expect(parseTimestamptz("infinity")).toBe(pgParse("infinity"));
    expect(parseTimestamptz("0044-03-15 12:00:00+00 BC").getTime()).toBe(pgParse("0044-03-15 12:00:00+00 BC").getTime());
  });
});
