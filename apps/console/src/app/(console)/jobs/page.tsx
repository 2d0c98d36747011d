import type { Metadata } from "next";
import { Suspense } from "react";
import { Loading } from "../../../components/states";
import { JobsView } from "./jobs-view";

export const metadata: Metadata = { title: "Jobs" };

/** The jobs browser: filters in the URL, counts per state, cursor pages, bulk actions. */
export default function JobsPage() {
  return (
    <Suspense fallback={<Loading />}>
      <JobsView />
    </Suspense>
  );
}
