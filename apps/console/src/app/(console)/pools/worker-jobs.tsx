"use client";
import Link from "next/link";
import { type Column, DataTable, rowsList } from "../../../components/data-table";
import { duration, idTail } from "../../../lib/format";
import type { RouterOutputs } from "../../../lib/trpc";

export type RunningJob = RouterOutputs["pools"]["workers"]["running"][number];

/** The worker page's path for a worker id. */
export const workerHref = (id: string) => `/pools/workers/${encodeURIComponent(id)}`;

const COLUMNS: ReadonlyArray<Column<RunningJob>> = [
  {
    header: "Job",
    className: "mono",
    cell: (j) => (
      <Link href={`/jobs/${j.job_id}`} title={j.job_id} data-testid="running-job-link">
        {idTail(j.job_id)}
      </Link>
    ),
  },
  { header: "Type", cell: (j) => j.job_type },
  { header: "Queue", cell: (j) => j.queue_id },
  { header: "Tenant", cell: (j) => <Link href={`/tenants/${encodeURIComponent(j.tenant_id)}`}>{j.tenant_id}</Link> },
  { header: "Attempt", isNumeric: true, cell: (j) => j.attempt },
  {
    header: "Started",
    isNumeric: true,
    cell: (j) => (
      <span
        title={`claimed ${j.claimed_at}${j.started_at ? `, handler started ${j.started_at}` : ", in the worker's prefetch buffer"}`}
      >{`${j.claimed_ms_ago} ms ago`}</span>
    ),
  },
  {
    header: "Lease expires",
    isNumeric: true,
    cell: (j) =>
      j.lease_expires_in_ms === null
        ? "—"
        : j.lease_expires_in_ms < 0
          ? `expired ${duration(-j.lease_expires_in_ms)} ago`
          : `in ${duration(j.lease_expires_in_ms)}`,
  },
];

/** A worker's running jobs, 50 a page (the table pages them). */
export function WorkerJobsTable({ workerId, jobs }: { workerId: string; jobs: readonly RunningJob[] }) {
  return (
    <>
      <DataTable
        query={rowsList(jobs)}
        columns={COLUMNS}
        rowKey={(j) => j.job_id}
        caption={`Jobs running on ${workerId}`}
        rowProps={() => ({ "data-testid": "worker-running-job", "data-worker": workerId })}
        empty={<p className="muted">Nothing running on this worker now.</p>}
      />
    </>
  );
}
