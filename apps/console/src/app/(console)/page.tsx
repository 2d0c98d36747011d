import type { Metadata } from "next";
import { OverviewView } from "./overview-view";

export const metadata: Metadata = { title: "Overview" };

/** The console's home: per queue counts, oldest ready age, running vs cap, and recent throughput. */
export default function OverviewPage() {
  return <OverviewView />;
}
