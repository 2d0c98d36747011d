"use client";
import { FLOW_SERIES_WINDOW_NAMES } from "@porter/api/schemas/overview";
import { useQuery } from "@tanstack/react-query";
import { type ReactNode, useId, useState } from "react";
import { Area, CartesianGrid, ComposedChart, Legend, Line, LineChart, ResponsiveContainer, Tooltip, XAxis, YAxis } from "recharts";
import { count, duration } from "../lib/format";
import { type RouterOutputs, useTRPC } from "../lib/trpc";
import { Empty, ErrorState, Loading } from "./states";

/**
 * The scope of a set of flow charts: the whole system, one queue, one tenant, or one job type
 * within them (issue 14, deliverable 3).
 */
export type FlowScope = { queue_id?: string; tenant_id?: string; job_type?: string };

/** The windows every chart offers (15 min … 7 days): the API contract's (schemas/overview.ts). */
export const FLOW_WINDOWS = FLOW_SERIES_WINDOW_NAMES;
export type FlowWindow = (typeof FLOW_WINDOWS)[number];

type Series = RouterOutputs["overview"]["series"];
type Point = Series["points"][number];

const WINDOW_LABEL: Record<FlowWindow, string> = { "15m": "15 min", "1h": "1 h", "6h": "6 h", "24h": "24 h", "7d": "7 d" };
const WINDOW_PHRASE: Record<FlowWindow, string> = { "15m": "15 minutes", "1h": "hour", "6h": "6 hours", "24h": "24 hours", "7d": "7 days" };
/** Short windows move every minute: refetch every 10 s; the 5-minute and hourly steps less often. */
const REFETCH_MS: Record<FlowWindow, number> = { "15m": 10_000, "1h": 10_000, "6h": 60_000, "24h": 300_000, "7d": 300_000 };
const COLORS = {
  arrivals: "#2457c5",
  succeeded: "#1f8a4c",
  dead: "#c0392b",
  cancelled: "#8a94a6",
  expired: "#d68a00",
  p50: "#1f8a4c",
  p95: "#d68a00",
  p99: "#c0392b",
};

const pad = (n: number) => String(n).padStart(2, "0");
const DAYS = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
/** hh:mm for minute steps; "Tue 14:00" for the 7-day window's hours. */
const stepLabel = (iso: string, window: FlowWindow) => {
  const d = new Date(iso);
  const hhmm = `${pad(d.getHours())}:${pad(d.getMinutes())}`;
  return window === "7d" ? `${DAYS[d.getDay()]} ${hhmm}` : hhmm;
};
const seconds = (s: number | null) => (s === null ? "—" : duration(s * 1000));
const ms = (v: number | null) => (v === null ? "—" : duration(v));
/** Log axes cannot show 0: latencies are ≥ 1 ms (a histogram bucket's upper bound); gauges are shown on a linear axis. */
const tooltipMs = (v: unknown) => (typeof v === "number" ? duration(v) : "—");
const tooltipS = (v: unknown) => (typeof v === "number" ? duration(v * 1000) : "—");

/**
 * Lines over few values (a burst in one step) mark them with dots, or a lone value would draw
 * nothing; steps without a value get no dot.
 */
const dotsFor = (values: Array<number | null>, color: string) =>
  values.filter((v) => v !== null && v !== 0).length > 12
    ? false
    : ({ cx, cy, value, index }: { cx?: number; cy?: number; value?: unknown; index?: number }) =>
        typeof value === "number" && value !== 0 && cx !== undefined && cy !== undefined ? (
          <circle key={index} cx={cx} cy={cy} r={3} fill={color} stroke="none" />
        ) : (
          <g key={index} />
        );

const hasFlow = (p: Point) => p.arrivals + p.starts + p.succeeded + p.dead + p.cancelled + p.expired + p.retried > 0;
const hasGauge = (p: Point) => (p.ready ?? 0) + (p.running ?? 0) + (p.backlog_s ?? 0) + (p.oldest_claimable_age_s ?? 0) > 0;

/**
 * The flow charts of a scope, with their own window picker: arrivals vs completions, wait and run
 * percentiles, backlog seconds and oldest age. The overview, the queue page and the tenant page all
 * render this one component; each chart is followed by a screen-reader table of its numbers.
 */
export function FlowCharts({ scope, initialWindow = "1h" }: { scope: FlowScope; initialWindow?: FlowWindow }) {
  const trpc = useTRPC();
  const [window, setWindow] = useState<FlowWindow>(initialWindow);
  const titleId = useId();
  const series = useQuery({
    ...trpc.overview.series.queryOptions({
      window,
      ...(scope.queue_id ? { queue_id: scope.queue_id } : {}),
      ...(scope.tenant_id ? { tenant_id: scope.tenant_id } : {}),
      ...(scope.job_type ? { job_type: scope.job_type } : {}),
    }),
    refetchInterval: REFETCH_MS[window],
    placeholderData: (previous) => (previous?.window === window ? previous : undefined),
  });

  return (
    <section className="panel flow-charts" aria-labelledby={titleId} data-testid="flow-charts" data-scope={JSON.stringify(scope)} data-window={window}>
      <div className="panel-head">
        <h2 id={titleId}>Flow</h2>
        <WindowPicker value={window} onChange={setWindow} />
      </div>
      {series.isPending ? (
        <Loading label="Loading the flow charts…" />
      ) : series.error ? (
        <ErrorState error={series.error} onRetry={() => void series.refetch()} title="Could not load the flow charts" />
      ) : !series.data.points.some((p) => hasFlow(p) || hasGauge(p)) ? (
        <Empty title="No traffic in this window">
          Nothing arrived, ran or waited in the last {WINDOW_PHRASE[window]}. Pick a longer window, or enqueue work.
        </Empty>
      ) : (
        <Charts series={series.data} window={window} />
      )}
    </section>
  );
}

/** A radio group (arrow keys move between windows, as native radios do). */
function WindowPicker({ value, onChange }: { value: FlowWindow; onChange: (w: FlowWindow) => void }) {
  const name = useId();
  return (
    <fieldset className="segmented" data-testid="flow-window">
      <legend className="sr-only">Window</legend>
      {FLOW_WINDOWS.map((w) => (
        <label key={w} className={w === value ? "is-checked" : undefined}>
          <input type="radio" name={name} value={w} checked={w === value} onChange={() => onChange(w)} />
          {WINDOW_LABEL[w]}
        </label>
      ))}
    </fieldset>
  );
}

function Charts({ series, window }: { series: Series; window: FlowWindow }) {
  const step = series.step_s >= 3600 ? "hour" : series.step_s >= 300 ? "5 min" : "minute";
  const data = series.points.map((p) => ({
    ...p,
    label: stepLabel(p.at, window),
    completions: p.succeeded + p.dead + p.cancelled + p.expired,
    wait_p50: p.wait_ms.p50,
    wait_p95: p.wait_ms.p95,
    wait_p99: p.wait_ms.p99,
    run_p50: p.run_ms.p50,
    run_p95: p.run_ms.p95,
    run_p99: p.run_ms.p99,
  }));
  const arrivals = data.reduce((n, p) => n + p.arrivals, 0);
  const completions = data.reduce((n, p) => n + p.completions, 0);
  const axis = { tick: { fontSize: 12 }, interval: "preserveStartEnd" as const, minTickGap: 24 };

  return (
    <div className="flow-grid">
      <Chart
        id="arrivals"
        title={`Arrivals vs completions per ${step}`}
        summary={`${count(arrivals)} arrived, ${count(completions)} completed in the window`}
        note="Completions stacked by outcome; the line is arrivals. From the flow rollups."
        head={["Step", "Arrivals", "Succeeded", "Dead", "Cancelled", "Expired", "Retried"]}
        rows={data.map((p) => [p.label, count(p.arrivals), count(p.succeeded), count(p.dead), count(p.cancelled), count(p.expired), count(p.retried)])}
      >
        <ComposedChart data={data} margin={{ top: 8, right: 8, bottom: 0, left: -12 }}>
          <CartesianGrid strokeDasharray="3 3" vertical={false} stroke="#e3e6ec" />
          <XAxis dataKey="label" {...axis} />
          <YAxis allowDecimals={false} tick={{ fontSize: 12 }} />
          <Tooltip />
          <Legend wrapperStyle={{ fontSize: 12 }} />
          {(["succeeded", "dead", "cancelled", "expired"] as const).map((k) => (
            <Area
              key={k}
              dataKey={k}
              name={k}
              stackId="done"
              type="stepAfter"
              stroke={COLORS[k]}
              fill={COLORS[k]}
              fillOpacity={0.35}
              isAnimationActive={false}
            />
          ))}
          <Line
            dataKey="arrivals"
            name="arrivals"
            type="stepAfter"
            stroke={COLORS.arrivals}
            strokeWidth={2}
            dot={dotsFor(
              data.map((p) => p.arrivals),
              COLORS.arrivals,
            )}
            isAnimationActive={false}
          />
        </ComposedChart>
      </Chart>
      <LatencyChart id="wait" title="Wait (ready → claim)" data={data} prefix="wait" axis={axis} />
      <LatencyChart id="run" title="Run time (start → end)" data={data} prefix="run" axis={axis} />
      {series.has_gauges ? (
        <Chart
          id="backlog"
          title="Backlog seconds and oldest claimable age"
          summary="sampled once a minute per queue"
          note={
            !data.some((p) => p.backlog_s !== null || p.oldest_claimable_age_s !== null)
              ? "No samples in this window yet: a worker's maintenance leader samples every queue once a minute (queue_samples)."
              : "The worst queue's sample in each step (queue_samples, written once a minute by the maintenance leader): backlog seconds = ready × mean run ÷ concurrency."
          }
          head={["Step", "Backlog", "Oldest", "Ready", "Running"]}
          rows={data.map((p) => [p.label, seconds(p.backlog_s), seconds(p.oldest_claimable_age_s), count(p.ready), count(p.running)])}
        >
          <LineChart data={data} margin={{ top: 8, right: 8, bottom: 0, left: 4 }}>
            <CartesianGrid strokeDasharray="3 3" vertical={false} stroke="#e3e6ec" />
            <XAxis dataKey="label" {...axis} />
            <YAxis tick={{ fontSize: 12 }} tickFormatter={(v: number) => duration(v * 1000)} width={84} />
            <Tooltip formatter={tooltipS} />
            <Legend wrapperStyle={{ fontSize: 12 }} />
            <Line
              dataKey="backlog_s"
              name="backlog"
              stroke={COLORS.arrivals}
              strokeWidth={2}
              dot={dotsFor(
                data.map((p) => p.backlog_s),
                COLORS.arrivals,
              )}
              isAnimationActive={false}
            />
            <Line
              dataKey="oldest_claimable_age_s"
              name="oldest age"
              stroke={COLORS.expired}
              strokeWidth={2}
              dot={dotsFor(
                data.map((p) => p.oldest_claimable_age_s),
                COLORS.expired,
              )}
              isAnimationActive={false}
            />
          </LineChart>
        </Chart>
      ) : (
        // A tenant's or job type's scope: no samples to chart (they are per queue), so no empty axes.
        <figure className="chart flow-chart" data-testid="flow-chart-backlog" aria-label="Backlog seconds and oldest claimable age, per queue only">
          <h3>Backlog seconds and oldest claimable age</h3>
          <div className="chart-box chart-none">
            <p className="muted">
              Backlog and oldest age are sampled per queue: a tenant's or job type's share of a backlog is not. Open the queue page for them.
            </p>
          </div>
        </figure>
      )}
    </div>
  );
}

type Row = Point & { label: string; [k: string]: unknown };

function LatencyChart({ id, title, data, prefix, axis }: { id: string; title: string; data: Row[]; prefix: "wait" | "run"; axis: object }) {
  const p95 = data.map((p) => p[`${prefix}_p95`] as number | null).filter((v): v is number => v !== null);
  return (
    <Chart
      id={id}
      title={`${title}: p50, p95, p99`}
      summary={p95.length ? `p95 up to ${duration(Math.max(...p95))}` : "nothing measured"}
      note="Log scale. Per step from the rollups' log2 histograms: exact to within a factor of 2."
      head={["Step", "p50", "p95", "p99"]}
      rows={data.map((p) => {
        const pc = prefix === "wait" ? p.wait_ms : p.run_ms;
        return [p.label, ms(pc.p50), ms(pc.p95), ms(pc.p99)];
      })}
    >
      <LineChart data={data} margin={{ top: 8, right: 8, bottom: 0, left: 4 }}>
        <CartesianGrid strokeDasharray="3 3" vertical={false} stroke="#e3e6ec" />
        <XAxis dataKey="label" {...axis} />
        <YAxis scale="log" domain={[1, "auto"]} allowDataOverflow tick={{ fontSize: 12 }} tickFormatter={(v: number) => duration(v)} width={84} />
        <Tooltip formatter={tooltipMs} />
        <Legend wrapperStyle={{ fontSize: 12 }} />
        {(["p50", "p95", "p99"] as const).map((q) => (
          <Line
            key={q}
            dataKey={`${prefix}_${q}`}
            name={q}
            stroke={COLORS[q]}
            strokeWidth={q === "p95" ? 2 : 1.5}
            dot={dotsFor(
              data.map((p) => p[`${prefix}_${q}`] as number | null),
              COLORS[q],
            )}
            isAnimationActive={false}
          />
        ))}
      </LineChart>
    </Chart>
  );
}

/** One chart: a titled figure, the chart hidden from screen readers, a table of the same numbers for them. */
function Chart({
  id,
  title,
  summary,
  note,
  head,
  rows,
  children,
}: {
  id: string;
  title: string;
  summary: string;
  note: string;
  head: string[];
  rows: string[][];
  children: ReactNode;
}) {
  return (
    <figure className="chart flow-chart" data-testid={`flow-chart-${id}`} aria-label={`${title}, ${summary}`}>
      <h3>{title}</h3>
      <div className="chart-box" aria-hidden="true">
        <ResponsiveContainer width="100%" height={220}>
          {children as React.ReactElement}
        </ResponsiveContainer>
      </div>
      <p className="muted small">{note}</p>
      <figcaption className="sr-only">
        <table>
          <caption>{title}</caption>
          <thead>
            <tr>
              {head.map((h) => (
                <th key={h} scope="col">
                  {h}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {rows.map((r, i) => (
              // biome-ignore lint/suspicious/noArrayIndexKey: steps are in time order; two steps can share a label across days
              <tr key={i}>
                {r.map((c, j) => (
                  // biome-ignore lint/suspicious/noArrayIndexKey: columns are fixed
                  <td key={j}>{c}</td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      </figcaption>
    </figure>
  );
}
