import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { JOB_TRANSITIONS } from "./transitions";
import { renderTransitionsSection, withTransitionsSection } from "./transitions-doc";

const DOC = fileURLToPath(new URL("../../../../docs/state-machine.md", import.meta.url));

describe("docs/state-machine.md", () => {
  it("carries the transitions section generated from sql/transitions.ts (run `npm run docs:states` when this fails)", () => {
    const doc = readFileSync(DOC, "utf8");
    expect(doc).toBe(withTransitionsSection(doc));
  });

  it("draws every transition's edges", () => {
    const section = renderTransitionsSection();
    for (const t of JOB_TRANSITIONS) expect(section).toContain(`| \`${t.name}\` |`);
    expect(section).toContain("    [*] --> READY: enqueue");
    expect(section).toContain("    DEAD --> READY: redrive");
  });

  it("refuses a document without the markers", () => {
    expect(() => withTransitionsSection("# no markers")).toThrow(/markers/);
  });
});
