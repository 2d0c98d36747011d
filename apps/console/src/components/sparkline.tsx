"use client";
import { Bar, BarChart, YAxis } from "recharts";

/**
 * Deaths per hour over the last 24 h (oldest first) as a tiny bar chart, not a tab stop (no
 * recharts accessibility layer: it would make every row's chart a tab stop). The numbers are in the
 * accessible name and the tooltip, so the chart is never the only way to read them.
 */
export function Sparkline({ values, label }: { values: readonly number[]; label: string }) {
  const total = values.reduce((a, b) => a + b, 0);
  const peak = Math.max(0, ...values);
  const data = values.map((v, i) => ({ h: i, v }));
  const name = `${label}: ${total} in the last 24 h, at most ${peak} in an hour`;
  return (
    <span className="sparkline" role="img" aria-label={name} title={name}>
      <BarChart width={72} height={22} data={data} accessibilityLayer={false} margin={{ top: 1, right: 0, bottom: 1, left: 0 }} barCategoryGap={1}>
        <YAxis hide domain={[0, Math.max(1, peak)]} />
        <Bar dataKey="v" fill="#b3261e" isAnimationActive={false} />
      </BarChart>
    </span>
  );
}
