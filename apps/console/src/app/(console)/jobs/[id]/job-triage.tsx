"use client";
import { useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { ErrorState, Loading } from "../../../../components/states";
import { Thread } from "../../../../components/triage/thread";
import { TriageControls } from "../../../../components/triage/triage-controls";
import { useTRPC } from "../../../../lib/trpc";

/**
 * A dead job's own triage (dlq.jobs.get / dlq.jobs.triage): owner, status, reason code and its
 * own thread, with the group page's components, and a link to the failure group it died into.
 * For the one job in a group that needs its own owner or status.
 */
export function JobTriage({ jobId }: { jobId: string }) {
  const trpc = useTRPC();
  const triage = useQuery(trpc.dlq.jobs.get.queryOptions({ job_id: jobId }));
  if (triage.isPending) return <Loading label="Loading the job's triage…" />;
  if (triage.error) return <ErrorState error={triage.error} onRetry={() => void triage.refetch()} />;
  const t = triage.data;
  const target = { kind: "job", job: t } as const;
  return (
    <>
      {t.group_id ? (
        <p className="small" data-testid="job-failure-group">
          It died into{" "}
          <Link href={`/dead-letters/${t.group_id}`} data-testid="job-failure-group-link">
            Failure group {t.group_id}
          </Link>
          ; that group's triage covers its other jobs, this one is the job's own.
        </p>
      ) : null}
      <div className="detail-grid">
        <TriageControls target={target} />
        <Thread target={target} title="This job's thread" />
      </div>
    </>
  );
}
