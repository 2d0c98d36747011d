"use client";
import { ZGroupId } from "@porter/api/schemas/dlq";
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { type ReactNode, useState } from "react";
import { StateBadge, Tag } from "../../../../components/badges";
import { JobIdCell } from "../../../../components/copy-id";
import { CursorPager, useCursorPages } from "../../../../components/cursor-pages";
import { type Column, DataTable } from "../../../../components/data-table";
import { DlqStatusBadge, LongText } from "../../../../components/dlq";
import { Page } from "../../../../components/page";
import { Sparkline } from "../../../../components/sparkline";
import { Empty, ErrorState, Loading } from "../../../../components/states";
import { Thread } from "../../../../components/triage/thread";
import { TriageControls } from "../../../../components/triage/triage-controls";
import { ago, count, dateTime } from "../../../../lib/format";
import { type RouterOutputs, useTRPC } from "../../../../lib/trpc";
import { RedrivePanel } from "./redrive-panel";

type GroupJob = RouterOutputs["dlq"]["groups"]["jobs"]["jobs"][number];

const JOB_COLUMNS: ReadonlyArray<Column<GroupJob>> = [
  {
    header: "Job",
    className: "id-cell",
    cell: (j) => <JobIdCell jobId={j.job_id} testId="group-job-id" />,
  },
  {
    header: "State",
    cell: (j) => (
      <>
        <StateBadge state={j.state} /> {j.partial ? <Tag tone="warn">partial</Tag> : null}
      </>
    ),
  },
  { header: "Queue", cell: (j) => j.queue_id },
  { header: "Tenant", cell: (j) => j.tenant_id },
  { header: "Attempt", isNumeric: true, cell: (j) => String(j.attempt) },
  { header: "Died", cell: (j) => <span title={dateTime(j.died_at)}>{ago(j.died_at)}</span> },
  { header: "Deadline", cell: (j) => (j.deadline_at ? <span title={dateTime(j.deadline_at)}>{ago(j.deadline_at)}</span> : "—") },
  { header: "Redrives", isNumeric: true, cell: (j) => String(j.redrive_count) },
  { header: "Message", className: "error-cell", isWrapping: true, cell: (j) => <LongText text={j.error_message} max={80} /> },
];

const crumbs = [{ href: "/dead-letters", label: "Dead letters" }];

export function GroupDetailView({ groupId }: { groupId: string }) {
  const trpc = useTRPC();
  const isValid = ZGroupId.safeParse(groupId).success;
  const group = useQuery({ ...trpc.dlq.groups.get.queryOptions({ id: groupId }), enabled: isValid, refetchInterval: 10_000 });

  const pending = (body: ReactNode) => (
    <Page title="Failure group" breadcrumbs={crumbs}>
      {body}
    </Page>
  );
  if (!isValid)
    return pending(
      <Empty title="Not a failure group id">
        Group ids are positive integers. <Link href="/dead-letters">Back to Dead letters</Link>
      </Empty>,
    );
  if (group.isPending) return pending(<Loading label="Loading the failure group…" />);
  if (group.error) {
    return pending(
      group.error.data?.httpStatus === 404 ? (
        <Empty title="No such failure group">
          <Link href="/dead-letters">Back to Dead letters</Link>
        </Empty>
      ) : (
        <ErrorState error={group.error} onRetry={() => void group.refetch()} />
      ),
    );
  }
  const g = group.data;
  return (
    <Page
      breadcrumbs={crumbs}
      titleClassName="job-title"
      title={
        <>
          <span>
            {g.job_type} · <code>{g.error_code}</code>
          </span>{" "}
          <DlqStatusBadge status={g.status} isRegression={g.is_regression} />
        </>
      }
      description={
        <>
          Group {g.id} · {count(g.count)} deaths, {count(g.dead_now)} dead now · last {ago(g.last_seen)}
        </>
      }
    >
      <div className="detail-grid">
        <section className="panel" aria-labelledby="failure-title">
          <h2 id="failure-title">Failure</h2>
          <dl className="kv">
            <dt>Fingerprint</dt>
            <dd className="mono break" data-testid="fingerprint">
              {g.fingerprint}
            </dd>
            <dt>Error</dt>
            <dd>
              <code>{g.error_code}</code> ({g.error_class})
            </dd>
            <dt>Normalized</dt>
            <dd className="mono break">{g.normalized_message}</dd>
            <dt>Sample</dt>
            <dd>
              <LongText text={g.sample_message} max={200} />{" "}
              <Link href={`/jobs/${g.sample_job_id}`} className="small">
                sample job
              </Link>
            </dd>
          </dl>
        </section>
        <section className="panel" aria-labelledby="counts-title">
          <h2 id="counts-title">Counts</h2>
          <dl className="kv">
            <dt>Deaths</dt>
            <dd>{count(g.count)}</dd>
            <dt>Dead now</dt>
            <dd data-testid="dead-now">{count(g.dead_now)}</dd>
            <dt>First seen</dt>
            <dd>{dateTime(g.first_seen)}</dd>
            <dt>Last seen</dt>
            <dd>
              {dateTime(g.last_seen)} ({ago(g.last_seen)})
            </dd>
            <dt>Oldest dead</dt>
            <dd>{g.oldest_dead_at ? `${dateTime(g.oldest_dead_at)} (${ago(g.oldest_dead_at)})` : "—"}</dd>
            <dt>Last 24 h</dt>
            <dd>
              <Sparkline values={g.sparkline} label="Deaths per hour" />
            </dd>
            <dt>Tenants</dt>
            <dd>{g.tenants.map((t) => `${t.tenant_id} (${count(t.count)})`).join(", ") || "—"}</dd>
            <dt>Queues</dt>
            <dd>{g.queues.map((q) => `${q.queue_id} (${count(q.count)})`).join(", ") || "—"}</dd>
            <dt>Worker versions</dt>
            <dd>{g.worker_versions.map((v) => `${v.version} (${count(v.count)})`).join(", ") || "—"}</dd>
            {g.reopened_at ? (
              <>
                <dt>Reopened</dt>
                <dd>{dateTime(g.reopened_at)}</dd>
              </>
            ) : null}
          </dl>
        </section>
      </div>

      <div className="detail-grid">
        <TriageControls target={{ kind: "group", group: g }} />
        <RedrivePanel group={g} />
      </div>

      <Thread target={{ kind: "group", group: g }} />

      <GroupJobs groupId={g.id} />
    </Page>
  );
}

function GroupJobs({ groupId }: { groupId: string }) {
  const trpc = useTRPC();
  const [isAll, setAll] = useState(false);
  const pages = useCursorPages();
  const jobs = useQuery({
    ...trpc.dlq.groups.jobs.queryOptions({ id: groupId, dead_only: !isAll, limit: 25, ...(pages.cursor ? { cursor: pages.cursor } : {}) }),
    placeholderData: keepPreviousData,
    refetchInterval: 5_000,
  });
  return (
    <section className="panel" aria-labelledby="group-jobs-title">
      <div className="panel-head">
        <h2 id="group-jobs-title">{isAll ? "Every job that died into this group (14 days)" : "Jobs dead now"}</h2>
        <label className="check">
          <input
            type="checkbox"
            checked={isAll}
            onChange={(e) => {
              setAll(e.target.checked);
              pages.reset();
            }}
          />{" "}
          show redriven jobs too
        </label>
      </div>
      <DataTable
        query={{ ...jobs, data: jobs.data?.jobs }}
        columns={JOB_COLUMNS}
        rowKey={(j) => j.job_id}
        caption="Jobs of this failure group"
        loadingLabel="Loading the group's jobs…"
        rowProps={(j) => ({ "data-state": j.state })}
        empty={
          <Empty title={isAll ? "No job died into this group in 14 days" : "No job of this group is dead now"}>
            {isAll ? "Older deaths are pruned." : "They were redriven or pruned; tick “show redriven jobs too” to see them."}
          </Empty>
        }
      />
      <CursorPager pages={pages} nextCursor={jobs.data?.next_cursor} shown={jobs.data?.jobs.length ?? 0} label="Pages of the group's jobs" />
    </section>
  );
}
