import { describe, expect, it } from "vitest";
import { safeCallbackPath, safeCallbackUrl } from "./safe-callback";

const ORIGIN = "http://127.0.0.1:3000";

describe("safeCallbackPath", () => {
  it("keeps same-origin relative paths with their query and fragment", () => {
    expect(safeCallbackPath("/", ORIGIN)).toBe("/");
    expect(safeCallbackPath("/jobs", ORIGIN)).toBe("/jobs");
    expect(safeCallbackPath("/jobs?state=DEAD&q=a%20b#top", ORIGIN)).toBe("/jobs?state=DEAD&q=a%20b#top");
    expect(safeCallbackPath("/jobs/../audit", ORIGIN)).toBe("/audit");
    expect(safeCallbackPath(["/queues"], ORIGIN)).toBe("/queues");
  });

  // Each of these, decoded from a query string, would leave the console or break the redirect.
  const hostile = [
    "/\t/evil.example", // issue 9: Chromium landed on http://evil.example/
    "/\n/x", // issue 9: a 500 (newline in Location)
    "/\r/evil.example",
    "/\u0000/evil.example",
    "/\u007f",
    "/\u0085x",
    "//evil.example",
    "//evil.example/path",
    "/\\evil.example",
    "\\\\evil.example",
    "/\\/evil.example",
    "/ /evil.example".replace(" ", "\t"),
    "http://evil.example/",
    "https://evil.example",
    "HTTP://127.0.0.1:3000.evil.example/",
    "javascript:alert(1)",
    "JaVaScRiPt:alert(1)",
    "data:text/html,<script>alert(1)</script>",
    "evil.example",
    "jobs",
    "",
    " /jobs",
    "http://127.0.0.1:3000/jobs", // absolute, even our own: only relative paths are accepted
  ];
  it.each(hostile)("falls back to / for %j", (value) => {
    expect(safeCallbackPath(value, ORIGIN)).toBe("/");
  });

  it("falls back to / for missing, repeated or non-string values", () => {
    expect(safeCallbackPath(undefined, ORIGIN)).toBe("/");
    expect(safeCallbackPath(["/a", "/b"], ORIGIN)).toBe("/");
    expect(safeCallbackPath(42, ORIGIN)).toBe("/");
    expect(safeCallbackPath(`/${"a".repeat(3000)}`, ORIGIN)).toBe("/");
  });

  it("the result never names another origin, for the percent-decoded vectors of the report", () => {
    for (const raw of ["%2F%09%2Fevil.example", "%2F%0A%2Fx", "%2F%2Fevil.example", "%2F%5Cevil.example"]) {
      const path = safeCallbackPath(decodeURIComponent(raw), ORIGIN);
      expect(new URL(path, ORIGIN).origin).toBe(ORIGIN);
      expect(path).toBe("/");
    }
  });
});

describe("safeCallbackUrl", () => {
  it("is the safe path on the console's origin", () => {
    expect(safeCallbackUrl("/jobs?x=1", `${ORIGIN}/`)).toBe(`${ORIGIN}/jobs?x=1`);
    expect(safeCallbackUrl("/\t/evil.example", ORIGIN)).toBe(`${ORIGIN}/`);
    expect(safeCallbackUrl("https://evil.example", "https://porter.example.com")).toBe("https://porter.example.com/");
  });
});
