"use client";
import { useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { Tag } from "../../../../components/badges";
import { type Column, DataTable, rowsList } from "../../../../components/data-table";
import { FlowCharts } from "../../../../components/flow-charts";
import { Page } from "../../../../components/page";
import { Empty, ErrorState, Loading } from "../../../../components/states";
import { count, duration } from "../../../../lib/format";
import { type RouterOutputs, useTRPC } from "../../../../lib/trpc";

type QueueSignals = RouterOutputs["overview"]["signals"]["queues"][number];
type Share = QueueSignals["by_tenant"][number] | QueueSignals["by_job_type"][number];
type ByTenant = QueueSignals["by_tenant"][number];
type ByJobType = QueueSignals["by_job_type"][number];

const seconds = (s: number | null | undefined) => (s === null || s === undefined ? "—" : s === 0 ? "0 s" : duration(s * 1000));
const ms = (v: number | null) => (v === null ? "—" : duration(v));
const percent = (part: number, whole: number) => (whole === 0 ? "—" : `${((100 * part) / whole).toFixed(1)} %`);

const shareColumns = <T extends Share>(first: Column<T>, starts: number): ReadonlyArray<Column<T>> => [
  first,
  { header: "Arrivals", isNumeric: true, cell: (t) => count(t.arrivals) },
  { header: "Completions", isNumeric: true, cell: (t) => count(t.completions) },
  { header: "Share of starts", isNumeric: true, cell: (t) => percent(t.starts, starts) },
  { header: "Wait p95", isNumeric: true, cell: (t) => ms(t.wait_ms.p95) },
  { header: "Run p95", isNumeric: true, cell: (t) => ms(t.run_ms.p95) },
];

/** A queue's page: what its signals say now, its flow over time, and who and what makes it up. */
export function QueueView({ queueId }: { queueId: string }) {
  const trpc = useTRPC();
  const signals = useQuery({
    ...trpc.overview.signals.queryOptions({ queue_id: queueId }),
    refetchInterval: 5_000,
    retry: (n, e) => e.data?.httpStatus !== 404 && n < 2,
  });
  const crumbs = [
    { href: "/", label: "Overview" },
    { href: "/queues", label: "Queues" },
  ];
  const frame = (body: React.ReactNode) => (
    <Page title={`Queue ${queueId}`} breadcrumbs={crumbs}>
      {body}
    </Page>
  );
  if (signals.isPending) return frame(<Loading label="Reading the queue's signals…" />);
  if (signals.error)
    return frame(
      signals.error.data?.httpStatus === 404 ? (
        <div data-testid="queue-not-found">
          <Empty title="No such queue">
            There is no queue <code>{queueId}</code>. <Link href="/queues">See every queue</Link>.
          </Empty>
        </div>
      ) : (
        <ErrorState error={signals.error} onRetry={() => void signals.refetch()} />
      ),
    );
  const q = signals.data.queues[0]!;
  const window = duration(signals.data.window_s * 1000);
  return (
    <Page
      title={
        <>
          Queue {q.queue_id} <StatusTag q={q} />
        </>
      }
      description={`Pool ${q.pool_id}. Flow over the last ${window}; ready, running and oldest now.`}
      breadcrumbs={crumbs}
      actions={
        <Link className="button" href={`/jobs?queue=${encodeURIComponent(q.queue_id)}`}>
          Browse its jobs
        </Link>
      }
    >
      <dl className="cards queue-signals" data-testid="queue-signals">
        <Stat label="Status" value={q.status === "at_risk" ? "At risk" : q.status === "growing" ? "Growing" : q.paused ? "Paused" : "Keeping up"} />
        <Stat label="Ready" value={`${count(q.ready)}${q.is_ready_lower_bound ? "+" : ""}`} />
        <Stat label="Running / cap" value={`${count(q.running)} / ${count(q.effective_concurrency)}`} />
        <Stat label="Oldest" value={seconds(q.oldest_claimable_age_s)} />
        <Stat label="Backlog" value={q.has_no_concurrency ? "no worker" : seconds(q.backlog_s)} />
        <Stat label="Drain" value={q.ready === 0 ? "empty" : q.drain_s === null ? "growing" : seconds(q.drain_s)} />
        <Stat label="Target wait" value={q.target_wait_s === null ? "none" : seconds(q.target_wait_s)} />
        <Stat
          label="Dead letters"
          value={
            <Link href={`/dead-letters?queue=${encodeURIComponent(q.queue_id)}`}>
              {count(q.dlq.count)}
              {q.dlq.unowned ? <span className="muted small"> ({count(q.dlq.unowned)} unowned)</span> : null}
            </Link>
          }
        />
      </dl>
      {q.status === "at_risk" ? (
        <p className="health health-down" role="status">
          <span className="dot" aria-hidden="true" />
          Projected wait {q.has_no_concurrency ? "unbounded: ready work and nothing to run it" : seconds(q.projected_wait_s)} — over the{" "}
          {seconds(q.target_wait_s)} target.
        </p>
      ) : null}
      <FlowCharts scope={{ queue_id: q.queue_id }} />
      <section aria-labelledby="by-tenant-title">
        <h2 id="by-tenant-title">By tenant</h2>
        <DataTable
          query={rowsList(q.by_tenant)}
          columns={shareColumns<ByTenant>(
            { header: "Tenant", cell: (t) => <Link href={`/tenants/${encodeURIComponent(t.tenant_id)}`}>{t.tenant_id}</Link> },
            q.starts,
          )}
          rowKey={(t) => t.tenant_id}
          caption={`Tenants of ${q.queue_id}, last ${window}`}
          empty={<Empty title={`No tenant's work in the last ${window}`} />}
        />
      </section>
      <section aria-labelledby="by-type-title">
        <h2 id="by-type-title">By job type</h2>
        <DataTable
          query={rowsList(q.by_job_type)}
          columns={shareColumns<ByJobType>({ header: "Job type", cell: (t) => t.job_type }, q.starts)}
          rowKey={(t) => t.job_type}
          caption={`Job types of ${q.queue_id}, last ${window}`}
          empty={<Empty title={`No job type's work in the last ${window}`} />}
        />
      </section>
    </Page>
  );
}

function StatusTag({ q }: { q: QueueSignals }) {
  if (q.status === "at_risk") return <Tag tone="bad">at risk</Tag>;
  if (q.status === "growing") return <Tag tone="warn">growing</Tag>;
  return q.paused ? <Tag tone="warn">paused</Tag> : <Tag tone="ok">keeping up</Tag>;
}

function Stat({ label, value }: { label: string; value: React.ReactNode }) {
  return (
    <div className="card stat">
      <dt className="stat-label">{label}</dt>
      <dd className="stat-value">{value}</dd>
    </div>
  );
}
