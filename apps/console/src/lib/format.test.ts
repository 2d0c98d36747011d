import { describe, expect, it } from "vitest";
import { dateTime, dateTimeMs } from "./format";

describe("dateTimeMs", () => {
  it("is dateTime with the milliseconds, zero-padded; an em dash for none", () => {
    const iso = "2026-11-30T14:03:07.048Z";
    expect(dateTimeMs(iso)).toBe(`${dateTime(iso)}.048`);
    expect(dateTimeMs("2026-11-30T14:03:07Z")).toMatch(/:07\.000$/);
    expect(dateTimeMs(null)).toBe("—");
  });
});
