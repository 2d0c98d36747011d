import type { ScenarioResult } from "./scenarios/common";
import { fmt, markdownTable, median, medianRange } from "./table";

/** Porter ÷ peer; "–" when either is missing or the peer's figure rounds to 0 at the column's precision. */
const ratio = (a: number, b: number, digits: number): string =>
  Number.isFinite(a) && Number.isFinite(b) && Math.abs(b) >= 0.5 * 10 ** -digits ? `${fmt(a / b, 2)}×` : "–";

/**
 * A scenario as markdown: one row per system with median (min–max) over the measured runs, then
 * Porter ÷ peer of the medians for every comparable column.
 */
export const scenarioMarkdown = (s: ScenarioResult): string => {
  const cols = s.columns;
  const footnotes: string[] = [];
  const body = s.rows.map((r) => {
    const foreign = Math.max(...(r.values.foreign ?? [0]));
    const notes =
      foreign > 0.05
        ? [
            ...r.notes,
            `WAL is cluster-wide: other databases on the server made ${fmt(foreign * 100)}% of its row writes during this measurement, so WAL B/job is inflated`,
          ]
        : r.notes;
    const marks = notes.map((n) => {
      footnotes.push(n);
      return `[${footnotes.length}]`;
    });
    return [`${r.label}${marks.length ? ` ${marks.join("")}` : ""}`, ...cols.map((c) => medianRange(r.values[c.key] ?? [], c.digits ?? 0))];
  });
  const parts = [`### ${s.title}`, "", markdownTable(["system", ...cols.map((c) => c.label)], body)];
  const comparable = cols.filter((c) => c.better !== "none");
  const refs = s.rows.filter((r) => r.isPorter);
  const peers = s.rows.filter((r) => !r.isPorter);
  if (refs.length && (peers.length || refs.length > 1) && comparable.length) {
    const row = (ref: (typeof refs)[number], other: (typeof refs)[number]) => [
      `${ref.label} ÷ ${other.label}`,
      ...comparable.map((c) => ratio(median(ref.values[c.key] ?? []), median(other.values[c.key] ?? []), c.digits ?? 0)),
    ];
    // Porter's other configurations (burn-down's policy row) also against Porter's own first row.
    const base = refs.find((r) => r.label === s.porterBase) ?? refs.find((r) => r.variant === "porter");
    const ratioRows = [...refs.filter((r) => base && r !== base).map((r) => row(r, base!)), ...refs.flatMap((ref) => peers.map((peer) => row(ref, peer)))];
    const legend = comparable.map((c) => `${c.label}: ${c.better === "higher" ? "above" : "below"} 1× favours Porter`).join("; ");
    parts.push("", markdownTable(["ratio (medians)", ...comparable.map((c) => c.label)], ratioRows), "", `Ratios — ${legend}.`);
    if (s.ratioCaveat) parts.push("", `**${s.ratioCaveat}**`);
  }
  const bullets = [...footnotes.map((n, i) => `[${i + 1}] ${n}`), ...s.notes];
  if (bullets.length) parts.push("", ...bullets.map((b) => `- ${b}`));
  return parts.join("\n");
};
