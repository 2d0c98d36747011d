"use client";
import { useQuery } from "@tanstack/react-query";
import Link from "next/link";
import type { ReactNode } from "react";
import { StateBadge, Tag } from "../../../../components/badges";
import { CopyId } from "../../../../components/copy-id";
import { type Column, DataTable, rowsList } from "../../../../components/data-table";
import { useJobActions } from "../../../../components/job-actions";
import { Page } from "../../../../components/page";
import { useViewer } from "../../../../components/providers";
import { Empty, ErrorState, Loading } from "../../../../components/states";
import { ago, dateTime, dateTimeMs, idTail, pretty } from "../../../../lib/format";
import { type RouterOutputs, useTRPC } from "../../../../lib/trpc";
import { JobTriage } from "./job-triage";
import { CheckpointPanel, ProgressBar } from "./progress";
import { Timeline } from "./timeline";

type Attempt = RouterOutputs["jobs"]["get"]["attempts"][number];

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** `run 3 · attempt 1 after redrive 2`: distinct per row even when redrives restart the counter. */
const runLabel = (a: Attempt) => `run ${a.run} · attempt ${a.attempt}${a.redrive ? ` after redrive ${a.redrive}` : ""}`;

export function JobDetailView({ jobId }: { jobId: string }) {
  const trpc = useTRPC();
  const viewer = useViewer();
  const isValid = UUID.test(jobId);
  const job = useQuery({
    ...trpc.jobs.get.queryOptions({ job_id: jobId }),
    enabled: isValid,
    // Live jobs change under our eyes; finished ones do not.
    refetchInterval: (q) => (q.state.data && ["READY", "RUNNING", "RETRY_WAIT"].includes(q.state.data.status) ? 2_000 : false),
  });
  const actions = useJobActions();

  /** Until the job is read: the page under Jobs, with what is known. */
  const pending = (body: ReactNode) => (
    <Page title="Job" breadcrumbs={[{ href: "/jobs", label: "Jobs" }]}>
      {body}
    </Page>
  );
  if (!isValid)
    return pending(
      <Empty title="Not a job id">
        Job ids are uuids. <Link href="/jobs">Back to jobs</Link>
      </Empty>,
    );
  if (job.isPending) return pending(<Loading label="Loading the job…" />);
  if (job.error) {
    const isMissing = job.error.data?.httpStatus === 404;
    return pending(
      isMissing ? (
        <Empty title="No such job">
          It may never have existed, or it finished long enough ago to be pruned by its queue's retention. <Link href="/jobs">Back to jobs</Link>
        </Empty>
      ) : (
        <ErrorState error={job.error} onRetry={() => void job.refetch()} />
      ),
    );
  }
  const j = job.data;
  const isLive = ["READY", "RUNNING", "RETRY_WAIT"].includes(j.status);
  const running = j.attempts.find((a) => a.outcome === "running");
  const selection = { job_ids: [j.job_id] };

  const label = `Job ${j.job_id}`;

  return (
    <Page
      breadcrumbs={[
        { href: "/jobs", label: "Jobs" },
        { href: `/jobs?queue=${encodeURIComponent(j.queue_id)}`, label: j.queue_id },
      ]}
      titleClassName="job-title"
      title={
        <>
          <span className="mono">{j.job_id}</span> <StateBadge state={j.status} />
          {j.cancel_requested && j.status === "RUNNING" ? <Tag tone="warn">cancel requested</Tag> : null}
          {j.partial ? (
            <Tag tone="warn" title="It recorded effects and did not succeed">
              partially completed
            </Tag>
          ) : null}
        </>
      }
      description={`${j.job_type} for ${j.tenant_id} · attempt ${j.attempt} of ${j.max_attempts} · created ${ago(j.created_at)}`}
      actionsLabel="Job actions"
      actions={
        viewer.can("operator") ? (
          <>
            {isLive ? (
              <button type="button" className="button" onClick={() => actions.start("cancel", selection, label)}>
                Cancel
              </button>
            ) : null}
            {j.status === "RETRY_WAIT" ? (
              <button type="button" className="button" onClick={() => actions.start("retry", selection, label)}>
                Retry now
              </button>
            ) : null}
            {j.status === "DEAD" ? (
              <button type="button" className="button primary" onClick={() => actions.start("redrive", selection, label)}>
                Redrive
              </button>
            ) : null}
          </>
        ) : null
      }
    >
      <div className="detail-grid">
        <section className="panel" aria-labelledby="now-title">
          <h2 id="now-title">Now</h2>
          <dl className="kv">
            <dt>State</dt>
            <dd>
              <StateBadge state={j.status} />
            </dd>
            {j.status === "RUNNING" && running ? (
              <>
                <dt>Running on</dt>
                <dd className="mono">
                  {running.worker_id ? <Link href={`/pools/workers/${encodeURIComponent(running.worker_id)}`}>{running.worker_id}</Link> : "—"}
                </dd>
                <dt>Started</dt>
                <dd title={dateTime(running.started_at)}>{ago(running.started_at)}</dd>
                <dt>Last heartbeat</dt>
                <dd title={dateTime(running.heartbeat_at)}>{running.heartbeat_at ? ago(running.heartbeat_at) : "none yet"}</dd>
                <dt>Progress</dt>
                <dd>
                  <ProgressBar progress={j.progress} />
                </dd>
              </>
            ) : null}
            {j.status === "RETRY_WAIT" ? (
              <>
                <dt>Next retry</dt>
                <dd title={dateTime(j.run_at)}>{ago(j.run_at)}</dd>
              </>
            ) : null}
            {j.status === "READY" ? (
              <>
                <dt>Runnable</dt>
                <dd title={dateTime(j.run_at)}>{j.run_at && new Date(j.run_at).getTime() > Date.now() ? ago(j.run_at) : `since ${ago(j.run_at)}`}</dd>
              </>
            ) : null}
            {j.finished_at ? (
              <>
                <dt>Finished</dt>
                <dd title={dateTime(j.finished_at)}>{ago(j.finished_at)}</dd>
              </>
            ) : null}
            {j.error ? (
              <>
                <dt>Last failure</dt>
                <dd>
                  <code>{j.error.code}</code> {j.error.message}
                </dd>
              </>
            ) : null}
          </dl>
        </section>

        <section className="panel" aria-labelledby="envelope-title">
          <h2 id="envelope-title">Envelope</h2>
          <dl className="kv">
            <dt>Job type</dt>
            <dd>{j.job_type}</dd>
            <dt>Queue</dt>
            <dd>{j.queue_id}</dd>
            <dt>Tenant</dt>
            <dd>{j.tenant_id}</dd>
            <dt>Priority</dt>
            <dd>{j.priority}</dd>
            <dt>Attempts</dt>
            <dd>
              {j.attempt} of {j.max_attempts}
            </dd>
            <dt>Timeout</dt>
            <dd>{j.timeout_s} s</dd>
            <dt>Idempotency key</dt>
            <dd className="mono break">{j.idempotency_key}</dd>
            <dt>Trace id</dt>
            <dd className="mono break">
              <Link href={`/jobs?trace=${encodeURIComponent(j.trace_id)}`}>{j.trace_id}</Link> <CopyId id={j.trace_id} label="trace id" />
            </dd>
            <dt>Traceparent</dt>
            <dd className="mono break" data-testid="job-traceparent">
              {j.traceparent ? (
                <>
                  {j.traceparent} <CopyId id={j.traceparent} label="traceparent" />
                </>
              ) : (
                "—"
              )}
            </dd>
            <dt>Created</dt>
            <dd>{dateTimeMs(j.created_at)}</dd>
            <dt>Not before</dt>
            <dd>{dateTimeMs(j.not_before)}</dd>
            <dt>Deadline</dt>
            <dd>{dateTimeMs(j.deadline_at)}</dd>
            <dt>Contract</dt>
            <dd>
              {j.contract} {j.contract_version}
            </dd>
          </dl>
        </section>
      </div>

      <div className="detail-grid">
        <section className="panel" aria-labelledby="payload-title">
          <h2 id="payload-title">Payload (references)</h2>
          <pre className="json">{pretty(j.payload)}</pre>
        </section>
        <section className="panel" aria-labelledby="outcome-title">
          <h2 id="outcome-title">{j.status === "SUCCEEDED" ? "Result" : "Error"}</h2>
          {j.status === "SUCCEEDED" ? (
            <pre className="json">{pretty(j.result)}</pre>
          ) : j.error ? (
            <dl className="kv">
              <dt>Code</dt>
              <dd>
                <code>{j.error.code}</code>
              </dd>
              <dt>Class</dt>
              <dd>{j.error.class}</dd>
              <dt>Message</dt>
              <dd className="break">{j.error.message}</dd>
              <dt>Attempt</dt>
              <dd>{j.error.attempt}</dd>
              <dt>Worker version</dt>
              <dd>{j.error.worker_version ?? "—"}</dd>
              <dt>Last checkpoint</dt>
              <dd>
                <code>{j.error.last_checkpoint === null || j.error.last_checkpoint === undefined ? "—" : JSON.stringify(j.error.last_checkpoint)}</code>
              </dd>
            </dl>
          ) : (
            <p className="muted">No result or error yet.</p>
          )}
        </section>
      </div>

      {j.status === "DEAD" ? <JobTriage jobId={j.job_id} /> : null}

      <CheckpointPanel checkpoint={j.checkpoint} />

      <section className="panel" aria-labelledby="attempts-title">
        <h2 id="attempts-title">Attempts</h2>
        <DataTable
          query={rowsList(j.attempts)}
          columns={ATTEMPT_COLUMNS}
          rowKey={(a) => String(a.run)}
          className="attempts"
          caption="Attempts"
          rowProps={() => ({ "data-testid": "attempt-row" })}
          empty={<p className="muted">Not started yet.</p>}
        />
      </section>

      <section className="panel" aria-labelledby="timeline-title">
        <h2 id="timeline-title">Timeline</h2>
        <Timeline events={j.timeline} />
      </section>
    </Page>
  );
}

const outcomeTone = (outcome: Attempt["outcome"]) =>
  outcome === "succeeded" ? "ok" : outcome === "running" ? "info" : outcome === "handed_back" || outcome === "not_started" ? "neutral" : "bad";

/** An instant to the millisecond (ISO, UTC), its local rendering as the title. */
const instant = (iso: string | null) =>
  iso ? (
    <time dateTime={iso} title={new Date(iso).toLocaleString()}>
      {iso}
    </time>
  ) : (
    "—"
  );

const ATTEMPT_COLUMNS: ReadonlyArray<Column<Attempt>> = [
  { header: "Run", cell: runLabel },
  {
    header: "Worker",
    className: "mono",
    cell: (a) =>
      a.worker_id ? (
        <Link href={`/pools/workers/${encodeURIComponent(a.worker_id)}`} title={a.worker_id} aria-label={`worker ${a.worker_id}`}>
          {idTail(a.worker_id)}
        </Link>
      ) : (
        "—"
      ),
  },
  {
    header: "Wait",
    isNumeric: true,
    cell: (a) => (
      <span title={`Available ${a.available_at} (enqueue, the retry's time, a hand-back or a redrive) → started ${a.started_at}`} data-testid="attempt-wait">
        {a.wait_ms.toLocaleString("en-US")} ms
      </span>
    ),
  },
  {
    header: "Run time",
    isNumeric: true,
    cell: (a) => (
      <span data-testid="attempt-run">
        {a.duration_ms === null
          ? `running for ${(Date.now() - new Date(a.started_at).getTime()).toLocaleString("en-US")} ms`
          : `${a.duration_ms.toLocaleString("en-US")} ms`}
      </span>
    ),
  },
  { header: "Started", cell: (a) => instant(a.started_at) },
  { header: "Ended", cell: (a) => instant(a.finished_at) },
  {
    header: "Outcome",
    cell: (a) => (
      <>
        <Tag tone={outcomeTone(a.outcome)}>{a.outcome}</Tag>
        {a.outcome === "lease_expired" ? (
          <Tag tone="warn" title="The worker lost its lease; the attempt may have run to completion elsewhere">
            possible duplicate
          </Tag>
        ) : null}
      </>
    ),
  },
  { header: "Last heartbeat", cell: (a) => instant(a.heartbeat_at) },
  { header: "Error", isWrapping: true, className: "break", cell: (a) => (a.error ? `${String(a.error.code ?? "")} ${String(a.error.message ?? "")}` : "—") },
  { header: "Retry at", cell: (a) => instant(a.retry_at) },
];
