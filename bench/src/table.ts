/** A markdown table, columns padded so it also reads well in a terminal. */
export const markdownTable = (header: string[], rows: string[][]): string => {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(" | ")} |`;
  return [line(header), `|${widths.map((w) => "-".repeat(w + 2)).join("|")}|`, ...rows.map(line)].join("\n");
};

export const fmt = (n: number, digits = 0): string =>
  Number.isFinite(n) ? n.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits }) : "–";

/** Median with min–max, as "12,345 (10,001–14,002)". */
export const medianRange = (values: number[], digits = 0): string => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length % 2 ? sorted[(sorted.length - 1) / 2]! : (sorted[sorted.length / 2 - 1]! + sorted[sorted.length / 2]!) / 2;
  return sorted.length > 1 ? `${fmt(mid, digits)} (${fmt(sorted[0]!, digits)}–${fmt(sorted.at(-1)!, digits)})` : fmt(mid, digits);
};

export const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length % 2 ? sorted[(sorted.length - 1) / 2]! : (sorted[sorted.length / 2 - 1]! + sorted[sorted.length / 2]!) / 2;
};
