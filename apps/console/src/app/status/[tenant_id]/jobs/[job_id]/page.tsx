import type { TenantTimelineEvent } from "@porter/core";
import type { Metadata } from "next";
import { notFound } from "next/navigation";
import { getPrisma, readOnReplica } from "../../../../../server/db";
import { loadStatusJob } from "../../../../../server/status-page";
import { LiveJob, StatusLive } from "../../live";
import { readLsn, statusRequest } from "../../request";
import { Failure, ProgressBar, Time } from "../../ui";

export const dynamic = "force-dynamic";
export const metadata: Metadata = { title: "Job status", robots: { index: false, follow: false } };

// One job of the tenant (issue 13, deliverable 3): state, attempts, progress, the tenant-safe
// failure and a tenant-safe timeline (core's tenantJob: no worker ids, hosts, operators or notes,
// no payload or result). Another tenant's job, a job type outside the link's scope and an unknown
// id are the same 404. Live updates for this job only (events?job_id=).

const KIND: Record<TenantTimelineEvent["kind"], string> = {
  created: "Created",
  started: "Attempt started",
  succeeded: "Attempt succeeded",
  failed: "Attempt failed",
  timed_out: "Attempt timed out",
  interrupted: "Attempt interrupted",
  returned: "Returned to the queue",
  retry_wait: "Waiting to retry",
  requeued: "Queued again",
  cancel_requested: "Cancellation requested",
  READY: "Ready",
  RUNNING: "Running",
  RETRY_WAIT: "Waiting to retry",
  SUCCEEDED: "Succeeded",
  DEAD: "Failed for good",
  CANCELLED: "Cancelled",
  EXPIRED: "Expired",
};

export default async function StatusJobPage({ params }: { params: Promise<{ tenant_id: string; job_id: string }> }) {
  const { tenant_id, job_id } = await params;
  const req = { ...(await statusRequest(tenant_id)), jobId: decodeURIComponent(job_id) };
  // The job on the read replica when it keeps up; not there (enqueued a moment ago): on the primary.
  const data = await readOnReplica(await readLsn(), (db) => loadStatusJob(getPrisma(), db, req));
  if (!data) notFound();
  const { tenant, job } = data;
  const home = `/status/${encodeURIComponent(tenant.id)}`;
  return (
    <div className="st-root" style={{ "--st-accent": tenant.accent } as React.CSSProperties}>
      <header className="st-header">
        <p className="st-back">
          <a href={home}>← {tenant.name}</a>
        </p>
        <h1>{job.job_type}</h1>
        <p className="st-scope st-id">{job.job_id}</p>
      </header>
      <main className="st-main" id="main">
        <StatusLive tenantId={tenant.id} jobId={job.job_id}>
          <section className="st-job st-job-detail" data-job-id={job.job_id} aria-label="Job">
            <div className="st-job-head">
              <span>State</span>
              <LiveJob jobId={job.job_id} state={job.state} progress={job.progress} part="state" />
            </div>
            <dl className="st-facts">
              <dt>Attempts</dt>
              <dd>
                {job.attempt} of {job.max_attempts}
              </dd>
              <dt>Created</dt>
              <dd>
                <Time at={job.created_at} />
              </dd>
              {job.next_attempt_at ? (
                <>
                  <dt>Next attempt</dt>
                  <dd>
                    <Time at={job.next_attempt_at} />
                  </dd>
                </>
              ) : null}
              {job.finished_at ? (
                <>
                  <dt>Finished</dt>
                  <dd>
                    <Time at={job.finished_at} />
                  </dd>
                </>
              ) : null}
            </dl>
            <LiveJob jobId={job.job_id} state={job.state} progress={job.progress} part="progress" />
            {job.state !== "RUNNING" && job.progress ? (
              <div className="st-last-progress">
                <span className="st-muted">Last progress</span>
                <ProgressBar progress={job.progress} />
              </div>
            ) : null}
            {job.state === "SUCCEEDED" ? null : <Failure failure={job.failure} />}
          </section>
          <section aria-labelledby="timeline">
            <h2 id="timeline">Timeline</h2>
            <ol className="st-timeline">
              {job.timeline.map((e) => (
                <li key={`${e.at}-${e.kind}-${e.attempt ?? ""}`} className={`st-tl st-tl-${e.kind.toLowerCase()}`}>
                  <Time at={e.at} />
                  <span className="st-tl-kind">
                    {KIND[e.kind]}
                    {e.attempt !== null && e.kind !== "created" ? ` (attempt ${e.attempt})` : ""}
                  </span>
                  {e.until ? (
                    <span className="st-muted">
                      {" until "}
                      <Time at={e.until} />
                    </span>
                  ) : null}
                  <Failure failure={e.failure} />
                </li>
              ))}
            </ol>
          </section>
        </StatusLive>
      </main>
      <footer className="st-footer">Times in UTC.</footer>
    </div>
  );
}
