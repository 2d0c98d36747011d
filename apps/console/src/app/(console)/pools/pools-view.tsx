"use client";
import { ZPoolCreate, ZPoolFields } from "@porter/api/schemas/control-plane";
import { createDefaults, POOL } from "@porter/contracts/control-plane";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import Link from "next/link";
import { useState } from "react";
import { Tag } from "../../../components/badges";
import { ConfigForm, entityFields } from "../../../components/config-form";
import { useConfirmedAction } from "../../../components/confirm-action";
import { orNone } from "../../../components/config-page";
import { useViewer } from "../../../components/providers";
import { Empty, errorMessage, QueryView } from "../../../components/states";
import { ago, count, dateTime, duration } from "../../../lib/format";
import { useTRPC } from "../../../lib/trpc";

const FIELDS = entityFields(POOL);

export function PoolsView() {
  const trpc = useTRPC();
  const viewer = useViewer();
  const queryClient = useQueryClient();
  const [showStopped, setShowStopped] = useState(false);
  const pools = useQuery({ ...trpc.pools.overview.queryOptions({ include_stopped: showStopped }), refetchInterval: 3_000 });
  const refresh = () => queryClient.invalidateQueries({ queryKey: trpc.pools.pathKey() });
  const create = useMutation(trpc.pools.create.mutationOptions({ onSuccess: refresh }));
  const update = useMutation(trpc.pools.update.mutationOptions({ onSuccess: refresh }));
  const drain = useMutation(trpc.pools.drain.mutationOptions({ onSuccess: refresh }));
  const resume = useMutation(trpc.pools.resume.mutationOptions({ onSuccess: refresh }));
  const [editing, setEditing] = useState<string | null>(null);
  const [flash, setFlash] = useState<{ tone: "ok" | "bad"; text: string } | null>(null);
  const confirm = useConfirmedAction();
  const overview = useQuery({ ...trpc.overview.queues.queryOptions(), refetchInterval: 5_000 });

  /** Draining a pool pauses each of its queues: the dialog names them and counts what stops. */
  const confirmDrain = (poolId: string, queueIds: string[]) => {
    const mine = (overview.data ?? []).filter((q) => queueIds.includes(q.queue_id));
    const ready = mine.reduce((n, q) => n + q.counts.READY, 0);
    const retrying = mine.reduce((n, q) => n + q.counts.RETRY_WAIT, 0);
    const running = mine.reduce((n, q) => n + q.counts.RUNNING, 0);
    setFlash(null);
    confirm.start({
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
            {running ? `${plural(running, "running job")} ${running === 1 ? "is" : "are"} left to finish.` : "No job of this pool is running now."} Its workers keep
            running and idle; Resume pool starts claims again.
          </p>
        </>
      ),
      run: async (reason) => {
        const r = await drain.mutateAsync({ id: poolId, reason });
        return `Draining: ${r.changed.length ? r.changed.join(", ") : "no queue changed"} (of ${r.queues.join(", ")}).`;
      },
    });
  };

  const act = async (fn: () => Promise<{ changed: string[]; queues: string[] }>, verb: string) => {
    try {
      const r = await fn();
      setFlash({ tone: "ok", text: `${verb}: ${r.changed.length ? r.changed.join(", ") : "no queue changed"} (of ${r.queues.join(", ")}).` });
    } catch (error) {
      setFlash({ tone: "bad", text: errorMessage(error) });
    }
  };

  return (
    <section aria-labelledby="page-title">
      <header className="page-head">
        <div>
          <h1 id="page-title">Pools &amp; workers</h1>
          <p className="intro">Lanes of work: each pool's queues and the worker processes serving it, with their heartbeats. Refreshes every few seconds.</p>
        </div>
        <div className="row-actions">
          <label className="check">
            <input type="checkbox" checked={showStopped} onChange={(e) => setShowStopped(e.target.checked)} /> Show stopped workers
          </label>
          {viewer.can("admin") ? (
            <button type="button" className="button primary" onClick={() => setEditing("new")}>
              New pool
            </button>
          ) : null}
        </div>
      </header>
      {flash ? (
        <p className={`flash flash-${flash.tone}`} role="status">
          {flash.text}
        </p>
      ) : null}
      {confirm.notice ? (
        <p className={`flash flash-${confirm.notice.tone}`} role="status">
          {confirm.notice.text}
        </p>
      ) : null}
      {editing && viewer.can("admin") ? (
        <div className="panel" role="region" aria-label={editing === "new" ? "New pool" : `Edit pool ${editing}`}>
          <h2>{editing === "new" ? "New pool" : `Edit pool ${editing}`}</h2>
          <ConfigForm
            key={editing}
            fields={FIELDS}
            mode={editing === "new" ? "create" : "edit"}
            schema={editing === "new" ? ZPoolCreate : ZPoolFields}
            initial={editing === "new" ? createDefaults(POOL) : (pools.data?.find((p) => p.id === editing) as Record<string, unknown> | undefined)}
            submitLabel={editing === "new" ? "Create pool" : "Save changes"}
            onCancel={() => setEditing(null)}
            onSubmit={async (values) => {
              if (editing === "new") await create.mutateAsync(values as never);
              else await update.mutateAsync({ id: editing, patch: values as never });
              setFlash({ tone: "ok", text: editing === "new" ? `Created pool ${String(values.id)}.` : `Saved pool ${editing}.` });
              setEditing(null);
            }}
          />
        </div>
      ) : null}

      <QueryView query={pools} loadingLabel="Loading pools…">
        {(rows) =>
          rows.length === 0 ? (
            <Empty title="No pools yet">{viewer.can("admin") ? "Create one with “New pool”." : "An admin can create one."}</Empty>
          ) : (
            <div className="pool-list">
              {rows.map((p) => {
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
                      <div className="row-actions">
                        {viewer.can("operator") ? (
                          allPaused ? (
                            <button type="button" className="button small" onClick={() => (confirm.clearNotice(), void act(() => resume.mutateAsync({ id: p.id }), "Resumed"))} aria-label={`Resume pool ${p.id}`}>
                              Resume pool
                            </button>
                          ) : (
                            <button
                              type="button"
                              className="button small"
                              onClick={() => confirmDrain(p.id, p.queues.map((q) => q.id))}
                              disabled={p.queues.length === 0}
                              aria-label={`Drain pool ${p.id}`}
                            >
                              Drain pool…
                            </button>
                          )
                        ) : null}
                        {viewer.can("admin") ? (
                          <button type="button" className="button small" onClick={() => setEditing(p.id)} aria-label={`Edit pool ${p.id}`}>
                            Edit
                          </button>
                        ) : null}
                      </div>
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
                    {p.workers.length === 0 ? (
                      <p className="muted">
                        No worker is serving this pool. Start one with <code>npm run worker -- --pool {p.id}</code>.
                      </p>
                    ) : (
                      <div className="table-wrap">
                        <table className="grid">
                          <caption className="sr-only">Workers of pool {p.id}</caption>
                          <thead>
                            <tr>
                              <th scope="col">Worker</th>
                              <th scope="col">Status</th>
                              <th scope="col">Host</th>
                              <th scope="col" className="num">
                                PID
                              </th>
                              <th scope="col">Started</th>
                              <th scope="col">Last heartbeat</th>
                              <th scope="col" className="num">
                                Running / slots
                              </th>
                              <th scope="col">Version</th>
                            </tr>
                          </thead>
                          <tbody>
                            {p.workers.map((w) => (
                              <tr key={w.id}>
                                <th scope="row" className="mono">
                                  {w.id}
                                </th>
                                <td>
                                  {w.status === "live" ? <Tag tone="ok">live</Tag> : w.status === "lost" ? <Tag tone="bad">lost</Tag> : <Tag>stopped</Tag>}{" "}
                                  {w.draining ? <Tag tone="warn">draining</Tag> : null}
                                </td>
                                <td>{w.host}</td>
                                <td className="num">{w.pid}</td>
                                <td title={dateTime(w.started_at)}>{ago(w.started_at)}</td>
                                <td title={dateTime(w.heartbeat_at)}>{w.stopped_at ? `stopped ${ago(w.stopped_at)}` : `${duration(w.heartbeat_age_s * 1000)} ago`}</td>
                                <td className="num">
                                  {w.running} / {w.concurrency}
                                </td>
                                <td>{w.version}</td>
                              </tr>
                            ))}
                          </tbody>
                        </table>
                      </div>
                    )}
                  </article>
                );
              })}
            </div>
          )
        }
      </QueryView>
      {confirm.element}
    </section>
  );
}

const plural = (n: number, noun: string) => `${count(n)} ${noun}${n === 1 ? "" : "s"}`;
