"use client";
import { Bar, BarChart, CartesianGrid, Legend, ResponsiveContainer, Tooltip, XAxis, YAxis } from "recharts";
import type { RouterOutputs } from "../lib/trpc";

type Point = RouterOutputs["overview"]["throughput"][number];

const hhmm = (iso: string) => {
  const d = new Date(iso);
  return `${String(d.getHours()).padStart(2, "0")}:${String(d.getMinutes()).padStart(2, "0")}`;
};

/** Completions per minute, stacked by outcome. A table of the same numbers follows for screen readers. */
export function ThroughputChart({ points }: { points: Point[] }) {
  const data = points.map((p) => ({ ...p, label: hhmm(p.minute) }));
  const total = points.reduce((n, p) => n + p.succeeded + p.dead + p.cancelled + p.expired, 0);
  return (
    <figure className="chart" aria-label={`Jobs finished per minute, ${total} in the window`}>
      <div className="chart-box" aria-hidden="true">
        <ResponsiveContainer width="100%" height={220}>
          <BarChart data={data} margin={{ top: 8, right: 8, bottom: 0, left: -16 }}>
            <CartesianGrid strokeDasharray="3 3" vertical={false} stroke="#e3e6ec" />
            <XAxis dataKey="label" tick={{ fontSize: 12 }} interval="preserveStartEnd" />
            <YAxis allowDecimals={false} tick={{ fontSize: 12 }} />
            <Tooltip />
            <Legend wrapperStyle={{ fontSize: 12 }} />
            <Bar dataKey="succeeded" name="succeeded" stackId="done" fill="#1f8a4c" isAnimationActive={false} />
            <Bar dataKey="dead" name="dead" stackId="done" fill="#c0392b" isAnimationActive={false} />
            <Bar dataKey="cancelled" name="cancelled" stackId="done" fill="#8a94a6" isAnimationActive={false} />
            <Bar dataKey="expired" name="expired" stackId="done" fill="#d68a00" isAnimationActive={false} />
          </BarChart>
        </ResponsiveContainer>
      </div>
      <figcaption className="sr-only">
        <table>
          <thead>
            <tr>
              <th>Minute</th>
              <th>Succeeded</th>
              <th>Dead</th>
              <th>Cancelled</th>
              <th>Expired</th>
            </tr>
          </thead>
          <tbody>
            {data.map((p) => (
              <tr key={p.minute}>
                <td>{p.label}</td>
                <td>{p.succeeded}</td>
                <td>{p.dead}</td>
                <td>{p.cancelled}</td>
                <td>{p.expired}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </figcaption>
    </figure>
  );
}
