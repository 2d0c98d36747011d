import type { Metadata } from "next";
import { Suspense } from "react";
import { Loading } from "../../../../components/states";
import { GroupDetailView } from "./group-detail-view";

export const metadata: Metadata = { title: "Failure group" };

/** One failure group: what failed, its jobs, the triage thread and controls, the redrive panel. */
export default async function GroupPage({ params }: { params: Promise<{ id: string }> }) {
  const { id } = await params;
  return (
    <Suspense fallback={<Loading />}>
      <GroupDetailView groupId={id} />
    </Suspense>
  );
}
