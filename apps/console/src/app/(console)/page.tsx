import type { Metadata } from "next";
import { OverviewView } from "./overview-view";

export const metadata: Metadata = { title: "Overview" };

/** The console's home: what needs attention (queues at risk, growing backlogs), per queue counts and backlog, and the flow charts. */
export default function OverviewPage() {
  return <OverviewView />;
}
