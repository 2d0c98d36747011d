import type { Row, ScenarioResult } from "./scenarios/common";
import { fmt, markdownTable, median } from "./table";
import type { VariantId } from "./variants";

/**
 * The performance targets (issue 15), read off one run's results: each with the figures it compares,
 * its ratio and whether this run meets it. A row whose scenario did not run, or whose rows are
 * missing, says so instead of a verdict.
 */
export type Target = {
  target: string;
  /** The figures compared, as "a ÷ b". */
  figures: string;
  ratio: number;
  /** The ratio's line, and which side of it meets the target. */
  line: number;
  meets: "above" | "below";
};

type Find = (row: Row) => boolean;
const byVariant =
  (id: VariantId): Find =>
  (row) =>
    row.variant === id;

/** The median of `key` in the first row of `scenario` that `find` picks; NaN if there is none. */
const medianOf = (results: readonly ScenarioResult[], scenario: string, find: Find, key: string): number => {
  const row = results.find((s) => s.id === scenario)?.rows.find(find);
  const values = row?.values[key];
  return values?.length ? median(values) : Number.NaN;
};

const verdict = (t: Target): string => {
  if (!Number.isFinite(t.ratio)) return "not measured in this run";
  const isMet = t.meets === "above" ? t.ratio >= t.line : t.ratio <= t.line;
  return isMet ? "**yes**" : "no";
};

/** Porter ÷ peer and the like: `a ÷ b` with both figures. */
const compare = (target: string, a: number, b: number, digits: number, unit: string, line: number, meets: Target["meets"]): Target => ({
  target,
  figures: `${fmt(a, digits)} ÷ ${fmt(b, digits)}${unit}`,
  ratio: a / b,
  line,
  meets,
});

/** Every target of issue 15 that `results` can speak to, in the order. */
export const targetsOf = (results: readonly ScenarioResult[]): Target[] => {
  const get = (scenario: string, find: Find, key: string) => medianOf(results, scenario, find, key);
  const rate = (id: VariantId) => get("c", byVariant(id), "rate");
  const porter = rate("porter");
  const policy = rate("porter-policy");
  const graphileTuned = rate("graphile-tuned");
  const pgbossTuned = rate("pgboss-tuned");

  const isHttp: Find = (r) => r.variant === "porter" && r.label === "porter (HTTP API)";
  const isDirect: Find = (r) => r.variant === "porter" && r.label !== "porter (HTTP API)";
  // (a) measures graphile-worker once for both of its configurations (the same enqueue): its plain row.
  const isGraphilePlain: Find = (r) => r.variant.startsWith("graphile") && !r.label.includes("jobKey");
  const direct1000 = get("a", isDirect, "b1000");

  const effect = (form: string) => get("g", (r) => r.variant === "porter" && r.label.endsWith(`(${form})`), "rate");
  const plainWrite = effect("plain write");

  const e = (id: VariantId, key: string) => get("e", byVariant(id), key);
  const backlog = (key: string) => get("f", byVariant("porter"), key);
  const wal = (id: VariantId) => get("c", byVariant(id), "wal");

  return [
    compare("policy path ≥ 85% of uncapped (c)", policy, porter, 0, " jobs/s", 0.85, "above"),
    compare("burn-down (c): Porter ≥ 2× graphile-worker tuned", porter, graphileTuned, 0, " jobs/s", 2, "above"),
    compare("burn-down (c): Porter ≥ 2× pg-boss tuned", porter, pgbossTuned, 0, " jobs/s", 2, "above"),
    compare("burn-down (c): policy path ≥ 2× graphile-worker tuned", policy, graphileTuned, 0, " jobs/s", 2, "above"),
    compare("burn-down (c): policy path ≥ 2× pg-boss tuned", policy, pgbossTuned, 0, " jobs/s", 2, "above"),
    compare("(a) 1000/call ≥ 1.2× graphile-worker tuned", direct1000, get("a", isGraphilePlain, "b1000"), 0, " jobs/s", 1.2, "above"),
    {
      target: "(b) HTTP single enqueue at c=32 ≥ 4,000 jobs/s",
      figures: `${fmt(get("b", isHttp, "c32"))} jobs/s (direct ${fmt(get("b", isDirect, "c32"))})`,
      ratio: get("b", isHttp, "c32") / 4000,
      line: 1,
      meets: "above",
    },
    compare("(a) HTTP batch (1000/call) ≥ 80% of direct", get("a", isHttp, "b1000"), direct1000, 0, " jobs/s", 0.8, "above"),
    compare("(g) ctx.effect as one statement ≥ 80% of the plain write", effect("ctx.effect, statement"), plainWrite, 0, " jobs/s", 0.8, "above"),
    compare("(g) ctx.effect, txOnly ≥ 80% of the plain write", effect("ctx.effect, txOnly"), plainWrite, 0, " jobs/s", 0.8, "above"),
    compare("(g) ctx.effect (a function) ≥ 80% of the plain write", effect("ctx.effect"), plainWrite, 0, " jobs/s", 0.8, "above"),
    compare("(f) claim p99 at the large backlog ≤ 1.2× the small one's", backlog("p99large"), backlog("p99small"), 2, " ms", 1.2, "below"),
    compare("(c) WAL per burned job ≤ 1.3× graphile-worker tuned's", wal("porter"), wal("graphile-tuned"), 0, " B", 1.3, "below"),
    compare("(e) idle enqueue→start p50 ≤ graphile-worker tuned's", e("porter", "startP50"), e("graphile-tuned", "startP50"), 1, " ms", 1, "below"),
    compare("(e) idle enqueue→start p99 ≤ graphile-worker tuned's", e("porter", "startP99"), e("graphile-tuned", "startP99"), 1, " ms", 1, "below"),
  ];
};

/** The targets as a markdown section: what each compares, the ratio, its line and whether it is met. */
export const targetsMarkdown = (results: readonly ScenarioResult[], mode: "quick" | "full"): string => {
  const targets = targetsOf(results);
  const rows = targets.map((t) => [
    t.target,
    t.figures,
    Number.isFinite(t.ratio) ? `${fmt(t.ratio, 2)}×` : "–",
    `${t.meets === "above" ? "≥" : "≤"} ${fmt(t.line, 2)}×`,
    verdict(t),
  ]);
  const measured = targets.filter((t) => Number.isFinite(t.ratio));
  const met = measured.filter((t) => verdict(t) === "**yes**").length;
  const lines = [
    "### Targets (issue 15), from this run",
    "",
    markdownTable(["target", "figures (medians)", "ratio", "line", "met?"], rows),
    "",
    `- ${met} of ${measured.length} measured targets met in this run.`,
    "- Realistic (i) has no line of its own: its table above compares Porter with the peers' nearest configurations.",
  ];
  if (mode === "quick") lines.push("- **Quick mode: these ratios are a smoke test, not the issue's figures (full mode's are; see (c)'s note).**");
  return lines.join("\n");
};
