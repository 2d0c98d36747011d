"use client";

/**
 * The scope of a set of flow charts: the whole system, one queue, one tenant, or one job type
 * within them (issue 14, deliverable 3).
 */
export type FlowScope = { queue_id?: string; tenant_id?: string; job_type?: string };

/** The windows every chart offers (15 min … 7 days). */
export const FLOW_WINDOWS = ["15m", "1h", "6h", "24h", "7d"] as const;
export type FlowWindow = (typeof FLOW_WINDOWS)[number];

/**
 * The flow charts of a scope, with their own window picker: arrivals vs completions, wait and run
 * percentiles, backlog seconds and oldest age. The overview, the queue page and the tenant page all
 * render this one component. (Contract stub: the implementation lands with the charts.)
 */
export function FlowCharts({ scope, initialWindow = "1h" }: { scope: FlowScope; initialWindow?: FlowWindow }) {
  return <section className="panel" data-testid="flow-charts" data-scope={JSON.stringify(scope)} data-window={initialWindow} />;
}
