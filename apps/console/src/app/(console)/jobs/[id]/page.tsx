import type { Metadata } from "next";
import { JobDetailView } from "./job-detail-view";

export const metadata: Metadata = { title: "Job" };

/** One job: envelope, payload refs, result or error, timeline, attempts, actions by role. */
export default async function JobPage({ params }: { params: Promise<{ id: string }> }) {
  const { id } = await params;
  return <JobDetailView jobId={id} />;
}
