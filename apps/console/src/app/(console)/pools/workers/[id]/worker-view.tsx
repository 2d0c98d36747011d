"use client";
import { useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { Tag } from "../../../../../components/badges";
import { CursorPager, useCursorPages } from "../../../../../components/cursor-pages";
import { type Column, DataTable } from "../../../../../components/data-table";
import { Page } from "../../../../../components/page";
import { Empty, ErrorState, Loading } from "../../../../../components/states";
import { count, dateTime, duration, idTail } from "../../../../../lib/format";
import { type RouterOutputs, useTRPC } from "../../../../../lib/trpc";
import { WorkerJobsTable } from "../../worker-jobs";

type Attempt = RouterOutputs["pools"]["workers"]["attempts"]["attempts"][number];

const ATTEMPT_COLUMNS: ReadonlyArray<Column<Attempt>> = [
  {
    header: "Job",
    className: "mono",
    cell: (a) => (
      <Link href={`/jobs/${a.job_id}`} title={a.job_id}>
        {idTail(a.job_id)}
      </Link>
    ),
  },
  { header: "Type", cell: (a) => a.job_type },
  { header: "Queue", cell: (a) => a.queue_id },
  { header: "Tenant", cell: (a) => a.tenant_id },
  { header: "Attempt", isNumeric: true, cell: (a) => a.attempt },
  { header: "Ended", cell: (a) => <span title={dateTime(a.finished_at)}>{a.finished_at}</span> },
  { header: "Run", isNumeric: true, cell: (a) => `${count(a.run_ms)} ms` },
  {
    header: "Outcome",
    cell: (a) => (
      <>
        <Tag tone={a.outcome === "succeeded" ? "ok" : a.outcome === "handed_back" ? "neutral" : "bad"}>{a.outcome}</Tag> {a.error_code ?? ""}
      </>
    ),
  },
];

/** A worker's page: host, pid, version, pool, slots, heartbeat, status; its running jobs; its recent attempts (cursor pages). */
export function WorkerView({ workerId }: { workerId: string }) {
  const trpc = useTRPC();
  const pages = useCursorPages();
  const worker = useQuery({ ...trpc.pools.workers.get.queryOptions({ id: workerId }), refetchInterval: 3_000, retry: false });
  const attempts = useQuery({
    ...trpc.pools.workers.attempts.queryOptions({ id: workerId, ...(pages.cursor ? { cursor: pages.cursor } : {}) }),
    enabled: worker.isSuccess,
  });
  const shell = (body: React.ReactNode) => (
    <Page breadcrumbs={[{ href: "/pools", label: "Pools & workers" }]} title={<span className="mono">{workerId}</span>}>
      {body}
    </Page>
  );
  if (worker.isPending) return shell(<Loading label="Loading the worker…" />);
  if (worker.error) {
    return shell(
      worker.error.data?.httpStatus === 404 ? (
        <Empty title="No such worker">
          No worker registered with this id. <Link href="/pools">Back to pools</Link>
        </Empty>
      ) : (
        <ErrorState error={worker.error} onRetry={() => void worker.refetch()} />
      ),
    );
  }
  const w = worker.data;
  return (
    <Page
      breadcrumbs={[{ href: "/pools", label: "Pools & workers" }]}
      title={
        <>
          <span className="mono">{w.id}</span>{" "}
          {w.status === "live" ? <Tag tone="ok">live</Tag> : w.status === "lost" ? <Tag tone="bad">lost</Tag> : <Tag>stopped</Tag>}{" "}
          {w.draining ? <Tag tone="warn">draining</Tag> : null}
        </>
      }
      description="A worker process: what it runs now and the attempts it ran. Refreshes every few seconds."
    >
      <section className="panel" aria-labelledby="worker-facts">
        <h2 id="worker-facts">Worker</h2>
        <dl className="kv" data-testid="worker-facts">
          <dt>Pool</dt>
          <dd>{w.pool_id}</dd>
          <dt>Host</dt>
          <dd>{w.host}</dd>
          <dt>PID</dt>
          <dd>{w.pid}</dd>
          <dt>Version</dt>
          <dd>{w.version}</dd>
          <dt>Running / slots</dt>
          <dd>
            {count(w.running)} / {count(w.concurrency)}
          </dd>
          <dt>Started</dt>
          <dd title={dateTime(w.started_at)}>{w.started_at}</dd>
          <dt>Last heartbeat</dt>
          <dd title={dateTime(w.heartbeat_at)}>{w.stopped_at ? `stopped ${w.stopped_at}` : `${duration(w.heartbeat_age_s * 1000)} ago (${w.heartbeat_at})`}</dd>
        </dl>
      </section>
      <section className="panel" aria-labelledby="worker-running">
        <h2 id="worker-running">Running now ({count(w.jobs.length)})</h2>
        <WorkerJobsTable workerId={w.id} jobs={w.jobs} />
      </section>
      <section className="panel" aria-labelledby="worker-attempts">
        <h2 id="worker-attempts">Recent attempts</h2>
        <DataTable
          query={{ ...attempts, data: attempts.data?.attempts, refetch: attempts.refetch }}
          columns={ATTEMPT_COLUMNS}
          rowKey={(a) => `${a.job_id}:${a.attempt}:${a.finished_at}`}
          caption={`Attempts ended on ${w.id}, newest first`}
          rowProps={() => ({ "data-testid": "worker-attempt" })}
          empty={<p className="muted">No attempt of this worker has ended yet.</p>}
        />
        <CursorPager pages={pages} nextCursor={attempts.data?.next_cursor} shown={attempts.data?.attempts.length ?? 0} label="Pages of attempts" />
      </section>
    </Page>
  );
}
