import type { Metadata } from "next";
import { ReasonCodesView } from "./reason-codes-view";

export const metadata: Metadata = { title: "Reason codes" };

/** The operator-defined list of reasons a group failed: everyone reads, admins edit. */
export default function ReasonCodesPage() {
  return <ReasonCodesView />;
}
