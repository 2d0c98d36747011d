import type { Metadata } from "next";
import { JobTypesView } from "./job-types-view";

export const metadata: Metadata = { title: "Job types" };

export default function Page() {
  return <JobTypesView />;
}
