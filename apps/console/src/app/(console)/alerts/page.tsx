import type { Metadata } from "next";
import { AlertsView } from "./alerts-view";

export const metadata: Metadata = { title: "Alerts" };

/** Dead-letter alerts: firing first, then resolved. */
export default function AlertsPage() {
  return <AlertsView />;
}
