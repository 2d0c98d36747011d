import type { Metadata } from "next";
import { RulesView } from "./rules-view";

export const metadata: Metadata = { title: "Alert rules" };

/** Alert rules (everyone reads, admins edit) and the alert webhook (admins). */
export default function RulesPage() {
  return <RulesView />;
}
