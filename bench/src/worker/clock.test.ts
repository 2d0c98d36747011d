import { execFileSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { clockAnchor, nowMs, useClockAnchor } from "./protocol";

describe("the bench's clock", () => {
  it("is the same in a process started later, given the parent's anchor, whatever the wall clock did", () => {
    // A child whose own wall-clock reading is off by 7 s (as after a step of the wall clock) reads
    // the parent's time once it takes the parent's anchor, and the parent's plus 7 s without it.
    const script = `
      const { clockAnchor, nowMs, useClockAnchor } = await import(${JSON.stringify(new URL("./protocol.ts", import.meta.url).href)});
      const [anchor, skew] = process.argv.slice(-2).map(Number);
      useClockAnchor(clockAnchor() + skew); // the child's own anchor, 7 s off
      const own = nowMs();
      useClockAnchor(anchor);
      console.log(JSON.stringify({ own, shared: nowMs() }));`;
    const before = nowMs();
    const out = execFileSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script, "--", String(clockAnchor()), "7000"], {
      encoding: "utf8",
    });
    const after = nowMs();
    const { own, shared } = JSON.parse(out) as { own: number; shared: number };
    expect(shared).toBeGreaterThanOrEqual(before);
    expect(shared).toBeLessThanOrEqual(after);
    expect(own - shared).toBeGreaterThan(6900);
  });

  it("moves by the anchor's change and keeps running at the monotonic clock's rate", () => {
    const anchor = clockAnchor();
    try {
      const t0 = nowMs();
      useClockAnchor(anchor - 60_000);
      const t1 = nowMs();
      expect(t0 - t1).toBeGreaterThan(59_999);
      expect(t0 - t1).toBeLessThan(60_050);
    } finally {
      useClockAnchor(anchor);
    }
  });
});
