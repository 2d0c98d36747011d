import { describe, expect, it } from "vitest";
import { browserPlan, DEFAULT_CHROMIUM } from "./global-setup";

const machine = (has: string[], opts: { root: boolean; apt: boolean }) => ({ exists: (p: string) => has.includes(p), ...opts });

describe("the e2e suite's browser", () => {
  it("uses the browser that is there", () => {
    expect(browserPlan(DEFAULT_CHROMIUM, machine([DEFAULT_CHROMIUM], { root: false, apt: false }))).toEqual({ kind: "ready" });
  });

  it("installs Debian's chromium when it is missing and we are root with apt", () => {
    const plan = browserPlan(DEFAULT_CHROMIUM, machine([], { root: true, apt: true }));
    expect(plan).toEqual({ kind: "install", command: "apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium" });
  });

  it("otherwise fails with the one command that fixes it", () => {
    const notRoot = browserPlan(DEFAULT_CHROMIUM, machine([], { root: false, apt: true }));
    expect(notRoot).toEqual({
      kind: "fail",
      message: expect.stringContaining("Fix: sudo sh -c 'apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium'"),
    });
    const noApt = browserPlan(DEFAULT_CHROMIUM, machine([], { root: true, apt: false }));
    expect(noApt).toEqual({ kind: "fail", message: expect.stringContaining("Fix: PORTER_CHROMIUM=/path/to/chromium npm test") });
  });

  it("never installs over a PORTER_CHROMIUM that is missing (apt would not put it there)", () => {
    const plan = browserPlan("/opt/chrome/chrome", machine([DEFAULT_CHROMIUM], { root: true, apt: true }));
    expect(plan).toEqual({ kind: "fail", message: expect.stringContaining("no browser at PORTER_CHROMIUM=/opt/chrome/chrome") });
  });
});
