"use client";
import { ZQueueCreate, ZQueueFields } from "@porter/api/schemas/control-plane";
import { createDefaults, QUEUE } from "@porter/contracts/control-plane";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import Link from "next/link";
import { useState } from "react";
import { Tag } from "../../../components/badges";
import { entityFields, type FieldSpec } from "../../../components/config-form";
import { ConfigPage, orNone } from "../../../components/config-page";
// Deadline, runtime, retention, aging and resource key are in each queue's edit form.
import { useViewer } from "../../../components/providers";
import { useConfirmedAction } from "../../../components/confirm-action";
import { errorMessage } from "../../../components/states";
import { count, duration } from "../../../lib/format";
import { useTRPC } from "../../../lib/trpc";

/** Every knob of a queue, as declared in @porter/contracts/control-plane (`QUEUE`). */
const fields = (pools: string[], resourceKeys: string[]): FieldSpec[] =>
  entityFields(QUEUE, {
    overrides: {
      pool_id: { options: pools.map((p) => ({ value: p, label: p })) },
      resource_key_id: { options: resourceKeys.map((k) => ({ value: k, label: k })) },
    },
  });

export function QueuesView() {
  const trpc = useTRPC();
  const viewer = useViewer();
  const queryClient = useQueryClient();
  const list = useQuery({ ...trpc.queues.list.queryOptions(), refetchInterval: 10_000 });
  const overview = useQuery({ ...trpc.overview.queues.queryOptions(), refetchInterval: 5_000 });
  const pools = useQuery(trpc.pools.list.queryOptions());
  const resourceKeys = useQuery(trpc.resourceKeys.list.queryOptions());
  const refresh = () => queryClient.invalidateQueries({ queryKey: trpc.queues.pathKey() }).then(() => queryClient.invalidateQueries({ queryKey: trpc.overview.pathKey() }));
  const create = useMutation(trpc.queues.create.mutationOptions({ onSuccess: refresh }));
  const update = useMutation(trpc.queues.update.mutationOptions({ onSuccess: refresh }));
  const pause = useMutation(trpc.queues.pause.mutationOptions({ onSuccess: refresh }));
  const resume = useMutation(trpc.queues.resume.mutationOptions({ onSuccess: refresh }));
  const drain = useMutation(trpc.queues.drain.mutationOptions({ onSuccess: refresh }));
  const [actionError, setActionError] = useState<string | null>(null);
  const confirm = useConfirmedAction();
  const runningOf = (id: string) => overview.data?.find((q) => q.queue_id === id)?.running ?? 0;

  /** Pause and drain both stop claims at once; the dialog says how many jobs that holds back. */
  const confirmStop = (kind: "pause" | "drain", id: string) => {
    const c = overview.data?.find((q) => q.queue_id === id)?.counts;
    const ready = c?.READY ?? 0;
    const retrying = c?.RETRY_WAIT ?? 0;
    const running = c?.RUNNING ?? 0;
    const verb = kind === "pause" ? "Pause" : "Drain";
    confirm.start({
      title: `${verb} queue ${id}`,
      confirmLabel: `${verb} queue ${id}`,
      summary: (
        <>
          <p>
            <strong>
              {verb} queue {id}: {jobs(ready, "ready job")} stop{ready === 1 ? "s" : ""} being claimed
            </strong>
            {retrying ? `, and ${jobs(retrying, "job")} waiting for a retry will not start when their time comes` : ""}.
          </p>
          <p>
            {running
              ? `${jobs(running, "running job")} ${running === 1 ? "is" : "are"} left to finish${kind === "drain" ? "; the queue shows “draining” until they have" : ""}.`
              : "No job of this queue is running now."}{" "}
            Producers can still enqueue; Resume starts claims again.
          </p>
        </>
      ),
      run: async (reason) => {
        const r = await (kind === "pause" ? pause : drain).mutateAsync({ id, reason });
        return r.changed ? `${kind === "pause" ? "Paused" : "Draining"} queue ${id} (${jobs(r.running, "job")} still running).` : `Queue ${id} was already paused.`;
      },
    });
  };

  const act = async (fn: () => Promise<unknown>) => {
    setActionError(null);
    try {
      await fn();
    } catch (error) {
      setActionError(errorMessage(error));
    }
  };

  return (
    <>
      {actionError ? (
        <p className="flash flash-bad" role="alert">
          {actionError}
        </p>
      ) : null}
      {confirm.notice ? (
        <p className={`flash flash-${confirm.notice.tone}`} role="status">
          {confirm.notice.text}
        </p>
      ) : null}
      <ConfigPage
        title="Queues"
        noun="queue"
        intro="Each queue belongs to a pool (lane) and carries its priorities, caps, lease, retry ceiling and backoff. Pausing stops new claims at once; draining pauses and lets running jobs finish."
        query={list}
        canEdit={viewer.can("admin")}
        fields={fields((pools.data ?? []).map((p) => p.id), (resourceKeys.data ?? []).map((k) => k.id))}
        createSchema={ZQueueCreate}
        editSchema={ZQueueFields}
        defaults={{ ...createDefaults(QUEUE), pool_id: pools.data?.[0]?.id ?? "" }}
        onCreate={(values) => create.mutateAsync(values as never)}
        onUpdate={(id, patch) => update.mutateAsync({ id, patch: patch as never })}
        emptyHint={<>Create a pool first, then its queues.</>}
        columns={[
          { header: "Queue", cell: (q) => <Link href={`/jobs?queue=${encodeURIComponent(q.id)}`}>{q.id}</Link> },
          {
            header: "Status",
            cell: (q) =>
              q.paused ? (
                runningOf(q.id) > 0 ? (
                  <Tag tone="warn">draining · {runningOf(q.id)} running</Tag>
                ) : (
                  <Tag tone="warn">paused</Tag>
                )
              ) : (
                <Tag tone="ok">active</Tag>
              ),
          },
          { header: "Pool", cell: (q) => q.pool_id },
          { header: "Priority", cell: (q) => `${q.default_priority} / ${q.max_priority}` },
          { header: "Running / cap", cell: (q) => `${runningOf(q.id)} / ${orNone(q.concurrency_cap)}` },
          { header: "Lease", cell: (q) => duration(q.lease_seconds * 1000) },
          { header: "Attempts", cell: (q) => `${q.default_max_attempts} / ${q.max_attempts}` },
          { header: "Backoff", cell: (q) => `${duration(q.backoff_base_ms)} → ${duration(q.backoff_cap_ms)}` },
          { header: "Timeout (max)", cell: (q) => `${duration(q.default_timeout_s * 1000)} (${duration(q.max_timeout_s * 1000)})` },
        ]}
        rowActions={(q) =>
          viewer.can("operator") ? (
            q.paused ? (
              <button type="button" className="button small" onClick={() => void act(() => resume.mutateAsync({ id: q.id }))} aria-label={`Resume queue ${q.id}`}>
                Resume
              </button>
            ) : (
              <>
                <button type="button" className="button small" onClick={() => confirmStop("pause", q.id)} aria-label={`Pause queue ${q.id}`}>
                  Pause…
                </button>
                <button type="button" className="button small" onClick={() => confirmStop("drain", q.id)} aria-label={`Drain queue ${q.id}`}>
                  Drain…
                </button>
              </>
            )
          ) : null
        }
      />
      {confirm.element}
    </>
  );
}

const jobs = (n: number, noun: string) => `${count(n)} ${noun}${n === 1 ? "" : "s"}`;
