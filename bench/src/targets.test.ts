import { describe, expect, it } from "vitest";
import type { Row, ScenarioResult } from "./scenarios/common";
import { targetsMarkdown, targetsOf } from "./targets";
import type { VariantId } from "./variants";

const row = (label: string, variant: VariantId, values: Record<string, number[]>): Row => ({
  label,
  variant,
  isPorter: variant.startsWith("porter"),
  values,
  notes: [],
});
const scenario = (id: string, rows: Row[]): ScenarioResult => ({ id, title: id, notes: [], columns: [], rows, details: [] });

/** One run's results shaped as the scenarios report them (three runs where the bench runs three). */
const results: ScenarioResult[] = [
  scenario("a", [
    row("porter", "porter", { b1000: [30_000, 34_000, 32_000] }),
    row("porter (HTTP API)", "porter", { b1000: [24_000, 26_000, 25_600] }),
    row("graphile-worker (default = tuned)", "graphile-default", { b1000: [25_000] }),
    row("graphile-worker (default = tuned), jobKey per job", "graphile-default", { b1000: [20_000] }),
  ]),
  scenario("b", [row("porter", "porter", { c32: [11_000] }), row("porter (HTTP API)", "porter", { c32: [3_900] })]),
  scenario("c", [
    row("porter", "porter", { rate: [24_000], wal: [1_100] }),
    row("porter (policy: capped queue in pool, 3 weighted tenants)", "porter-policy", { rate: [22_000] }),
    row("graphile-worker tuned", "graphile-tuned", { rate: [12_000], wal: [500] }),
    row("pg-boss tuned", "pgboss-tuned", { rate: [11_000] }),
  ]),
  scenario("e", [row("porter", "porter", { startP50: [5], startP99: [9] }), row("graphile-worker tuned", "graphile-tuned", { startP50: [4], startP99: [10] })]),
  scenario("f", [row("porter", "porter", { p99small: [80], p99large: [90] })]),
  scenario("g", [
    row("porter (plain write)", "porter", { rate: [1_000] }),
    row("porter (ctx.effect, statement)", "porter", { rate: [810] }),
    row("porter (ctx.effect, txOnly)", "porter", { rate: [700] }),
    row("porter (ctx.effect)", "porter", { rate: [600] }),
  ]),
];

describe("the issue's targets read off a run", () => {
  const byName = (name: string) => targetsOf(results).find((t) => t.target.startsWith(name))!;

  it("divides each target's figures (medians) and keeps which side of the line meets it", () => {
    expect(byName("policy path ≥ 85%").ratio).toBeCloseTo(22_000 / 24_000);
    expect(byName("burn-down (c): Porter ≥ 2× graphile").ratio).toBe(2);
    expect(byName("burn-down (c): Porter ≥ 2× pg-boss").ratio).toBeCloseTo(24_000 / 11_000);
    expect(byName("(a) 1000/call").ratio).toBeCloseTo(32_000 / 25_000); // the plain row, not the jobKey one
    expect(byName("(a) HTTP batch").ratio).toBeCloseTo(25_600 / 32_000);
    expect(byName("(b) HTTP single").ratio).toBeCloseTo(3_900 / 4_000);
    expect(byName("(g) ctx.effect as one statement").ratio).toBeCloseTo(0.81);
    expect(byName("(f) claim p99").ratio).toBeCloseTo(90 / 80);
    expect(byName("(c) WAL").ratio).toBeCloseTo(2.2);
    expect(byName("(c) WAL").meets).toBe("below");
  });

  it("prints met or not per target, a line that is exactly reached being met", () => {
    const markdown = targetsMarkdown(results, "full");
    const verdictOf = (name: string) =>
      markdown
        .split("\n")
        .find((l) => l.includes(name))!
        .split("|")
        .at(-2)!
        .trim();
    expect(verdictOf("Porter ≥ 2× graphile-worker tuned")).toBe("**yes**"); // 2.00× on the line
    expect(verdictOf("(b) HTTP single")).toBe("no");
    expect(verdictOf("(a) HTTP batch")).toBe("**yes**"); // 0.80×
    expect(verdictOf("(c) WAL")).toBe("no");
    expect(verdictOf("(e) idle enqueue→start p50")).toBe("no");
    expect(verdictOf("(e) idle enqueue→start p99")).toBe("**yes**");
    expect(markdown).not.toContain("Quick mode");
  });

  it("says a target was not measured when its scenario did not run, and flags quick mode", () => {
    const markdown = targetsMarkdown(
      results.filter((s) => s.id === "c"),
      "quick",
    );
    expect(markdown.split("\n").find((l) => l.includes("(g) ctx.effect as one statement"))).toContain("not measured in this run");
    expect(markdown).toContain("Quick mode");
    expect(markdown).toContain("4 of 6 measured targets met");
  });
});
