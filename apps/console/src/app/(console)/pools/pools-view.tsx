"use client";
import { ZPoolCreate, ZPoolFields } from "@porter/api/schemas/control-plane";
import { createDefaults, POOL } from "@porter/contracts/control-plane";
import { useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { useState } from "react";
import { Tag } from "../../../components/badges";
import { entityFields } from "../../../components/config-form";
import { orNone, useConfigEditor } from "../../../components/config-page";
import { type Column, DataTable, Pager, rowsList } from "../../../components/data-table";
import { Page } from "../../../components/page";
import { useViewer } from "../../../components/providers";
import { Empty, QueryView } from "../../../components/states";
import { useAction } from "../../../components/use-action";
import { ago, count, dateTime, duration } from "../../../lib/format";
import { pageOf } from "../../../lib/paging";
import { type RouterOutputs, useTRPC } from "../../../lib/trpc";
import { type RunningJob, WorkerJobsTable, workerHref } from "./worker-jobs";

type Pool = RouterOutputs["pools"]["overview"][number];
type Worker = Pool["workers"][number];
type PoolActionResult = RouterOutputs["pools"]["drain"];

const FIELDS = entityFields(POOL);

const WORKER_COLUMNS: ReadonlyArray<Column<Worker>> = [
  {
    header: "Worker",
    className: "mono",
    cell: (w) => (
      <Link href={workerHref(w.id)} data-testid="worker-link">
        {w.id}
      </Link>
    ),
  },
  {
    header: "Status",
    cell: (w) => (
      <>
        {w.status === "live" ? <Tag tone="ok">live</Tag> : w.status === "lost" ? <Tag tone="bad">lost</Tag> : <Tag>stopped</Tag>}{" "}
        {w.draining ? <Tag tone="warn">draining</Tag> : null}
      </>
    ),
  },
  { header: "Host", cell: (w) => w.host },
  { header: "PID", isNumeric: true, cell: (w) => w.pid },
  { header: "Started", cell: (w) => <span title={dateTime(w.started_at)}>{ago(w.started_at)}</span> },
  {
    header: "Last heartbeat",
    cell: (w) => <span title={dateTime(w.heartbeat_at)}>{w.stopped_at ? `stopped ${ago(w.stopped_at)}` : `${duration(w.heartbeat_age_s * 1000)} ago`}</span>,
  },
  { header: "Running / slots", isNumeric: true, cell: (w) => `${w.running} / ${w.concurrency}` },
  { header: "Version", cell: (w) => w.version },
];

/** `Draining: diag, email (of diag, email)`: which of the pool's queues the action changed. */
const queuesChanged = (verb: string) => (r: PoolActionResult) =>
  `${verb}: ${r.changed.length ? r.changed.join(", ") : "no queue changed"} (of ${r.queues.join(", ")}).`;

export function PoolsView() {
  const trpc = useTRPC();
  const viewer = useViewer();
  const [showStopped, setShowStopped] = useState(false);
  const [page, setPage] = useState(0);
  const pools = useQuery({ ...trpc.pools.overview.queryOptions({ include_stopped: showStopped }), refetchInterval: 3_000 });
  const overview = useQuery({ ...trpc.overview.queues.queryOptions(), refetchInterval: 5_000 });
  const running = useQuery({ ...trpc.pools.workers.running.queryOptions(), refetchInterval: 3_000 });
  const runningOf = (workerId: string): RunningJob[] => (running.data ?? []).filter((j) => j.worker_id === workerId);
  const refreshes = [trpc.pools, trpc.queues, trpc.overview];
  const drain = useAction(trpc.pools.drain.mutationOptions(), { refreshes, success: queuesChanged("Draining") });
  const resume = useAction(trpc.pools.resume.mutationOptions(), { refreshes, success: queuesChanged("Resumed") });
  const editor = useConfigEditor({
    noun: "pool",
    rows: pools.data,
    fields: FIELDS,
    createSchema: ZPoolCreate,
    editSchema: ZPoolFields,
    defaults: createDefaults(POOL),
    create: trpc.pools.create.mutationOptions(),
    update: trpc.pools.update.mutationOptions(),
    refreshes,
    canEdit: viewer.can("admin"),
  });

  /** Draining a pool pauses each of its queues: the dialog names them and counts what stops. */
  const confirmDrain = (poolId: string, queueIds: string[]) => {
    const mine = (overview.data ?? []).filter((q) => queueIds.includes(q.queue_id));
    const ready = mine.reduce((n, q) => n + q.counts.READY, 0);
    const retrying = mine.reduce((n, q) => n + q.counts.RETRY_WAIT, 0);
    const running = mine.reduce((n, q) => n + q.counts.RUNNING, 0);
    drain.confirm({
      title: `Drain pool ${poolId}`,
      confirmLabel: `Drain pool ${poolId}`,
      summary: (
        <>
          <p>
            <strong>
              Drain pool {poolId}: {plural(queueIds.length, "queue")} ({queueIds.join(", ")}) {queueIds.length === 1 ? "is" : "are"} paused, so{" "}
              {plural(ready, "ready job")} stop{ready === 1 ? "s" : ""} being claimed
            </strong>
            {retrying ? `, and ${plural(retrying, "job")} waiting for a retry will not start` : ""}.
          </p>
          <p>
            {running ? `${plural(running, "running job")} ${running === 1 ? "is" : "are"} left to finish.` : "No job of this pool is running now."} Its workers
            keep running and idle; Resume pool starts claims again.
          </p>
        </>
      ),
      input: ({ reason }) => ({ id: poolId, reason }),
    });
  };

  return (
    <Page
      title="Pools & workers"
      description="Lanes of work: each pool's queues and the worker processes serving it, with their heartbeats. Refreshes every few seconds."
      actions={
        <>
          <label className="check">
            <input type="checkbox" checked={showStopped} onChange={(e) => setShowStopped(e.target.checked)} /> Show stopped workers
          </label>
          {editor.newButton}
        </>
      }
    >
      {editor.panel}

      <QueryView query={pools} loadingLabel="Loading pools…">
        {(rows) => {
          if (rows.length === 0) return <Empty title="No pools yet">{viewer.can("admin") ? "Create one with “New pool”." : "An admin can create one."}</Empty>;
          const shown = pageOf(rows, page);
          return (
            <>
              <div className="pool-list">
                {shown.rows.map((p) => {
                  const live = p.workers.filter((w) => w.status === "live");
                  const slots = live.reduce((n, w) => n + w.concurrency, 0);
                  const allPaused = p.queues.length > 0 && p.queues.every((q) => q.paused);
                  return (
                    <article key={p.id} className="panel pool" aria-labelledby={`pool-${p.id}`}>
                      <div className="panel-head">
                        <div>
                          <h2 id={`pool-${p.id}`}>
                            {p.id} {live.length === 0 && p.queues.length > 0 ? <Tag tone="bad">no live worker</Tag> : null}
                          </h2>
                          <p className="muted">{p.description || "—"}</p>
                        </div>
                        <fieldset className="row-actions" aria-label={`Actions for pool ${p.id}`}>
                          {viewer.can("operator") ? (
                            allPaused ? (
                              <button
                                type="button"
                                className="button small"
                                onClick={() => resume.run({ id: p.id })}
                                disabled={resume.isPending}
                                aria-label={`Resume pool ${p.id}`}
                              >
                                Resume pool
                              </button>
                            ) : (
                              <button
                                type="button"
                                className="button small"
                                onClick={() =>
                                  confirmDrain(
                                    p.id,
                                    p.queues.map((q) => q.id),
                                  )
                                }
                                disabled={p.queues.length === 0}
                                aria-label={`Drain pool ${p.id}`}
                              >
                                Drain pool…
                              </button>
                            )
                          ) : null}
                          {editor.editButton(p)}
                        </fieldset>
                      </div>
                      <dl className="kv inline">
                        <dt>Running</dt>
                        <dd>
                          {p.running} {p.concurrency_cap ? `of cap ${p.concurrency_cap}` : `of ${slots} live slots`}
                        </dd>
                        <dt>Slots per worker</dt>
                        <dd>{p.worker_concurrency}</dd>
                        <dt>Pool cap</dt>
                        <dd>{orNone(p.concurrency_cap)}</dd>
                        <dt>Live workers</dt>
                        <dd>{live.length}</dd>
                      </dl>
                      <p className="queue-chips">
                        Queues:{" "}
                        {p.queues.length === 0
                          ? "none"
                          : p.queues.map((q) => (
                              <Link key={q.id} href={`/jobs?queue=${encodeURIComponent(q.id)}`} className={`chip${q.paused ? " chip-paused" : ""}`}>
                                {q.id}
                                {q.paused ? (q.running > 0 ? ` (draining, ${q.running} running)` : " (paused)") : q.running ? ` · ${q.running} running` : ""}
                              </Link>
                            ))}
                      </p>
                      <DataTable
                        query={rowsList(p.workers)}
                        columns={WORKER_COLUMNS}
                        rowKey={(w) => w.id}
                        caption={`Workers of pool ${p.id}`}
                        empty={
                          <p className="muted">
                            No worker is serving this pool. Start one with <code>npm run worker -- --pool {p.id}</code>.
                          </p>
                        }
                      />
                      {p.workers
                        .filter((w) => runningOf(w.id).length > 0)
                        .map((w) => (
                          <details key={w.id} className="worker-running" open data-testid={`worker-running-${w.id}`}>
                            <summary>
                              Running on <Link href={workerHref(w.id)}>{w.id}</Link>: {count(runningOf(w.id).length)}
                            </summary>
                            <WorkerJobsTable workerId={w.id} jobs={runningOf(w.id)} />
                          </details>
                        ))}
                    </article>
                  );
                })}
              </div>
              <Pager shown={shown} onPage={setPage} label="Pages of pools" />
            </>
          );
        }}
      </QueryView>
    </Page>
  );
}

const plural = (n: number, noun: string) => `${count(n)} ${noun}${n === 1 ? "" : "s"}`;
