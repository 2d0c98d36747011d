"use client";
import { ZQueueCreate, ZQueueFields } from "@porter/api/schemas/control-plane";
import { createDefaults, QUEUE } from "@porter/contracts/control-plane";
import { useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { Tag } from "../../../components/badges";
import { entityFields, type FieldSpec } from "../../../components/config-form";
import { ConfigPage, orNone } from "../../../components/config-page";
// Deadline, runtime, retention, aging and resource key are in each queue's edit form.
import { useViewer } from "../../../components/providers";
import { useAction } from "../../../components/use-action";
import { count, duration } from "../../../lib/format";
import { type RouterOutputs, useTRPC } from "../../../lib/trpc";

type PauseResult = RouterOutputs["queues"]["pause"];
type Queue = RouterOutputs["queues"]["list"][number];

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
  const list = useQuery({ ...trpc.queues.list.queryOptions(), refetchInterval: 10_000 });
  const overview = useQuery({ ...trpc.overview.queues.queryOptions(), refetchInterval: 5_000 });
  const pools = useQuery(trpc.pools.list.queryOptions());
  const resourceKeys = useQuery(trpc.resourceKeys.list.queryOptions());
  const refreshes = [trpc.queues, trpc.overview];
  const stopped = (kind: "pause" | "drain") => (r: PauseResult) =>
    r.changed ? `${kind === "pause" ? "Paused" : "Draining"} queue ${r.id} (${jobs(r.running, "job")} still running).` : `Queue ${r.id} was already paused.`;
  const pause = useAction(trpc.queues.pause.mutationOptions(), { refreshes, success: stopped("pause") });
  const drain = useAction(trpc.queues.drain.mutationOptions(), { refreshes, success: stopped("drain") });
  const resume = useAction(trpc.queues.resume.mutationOptions(), {
    refreshes,
    success: (r) => (r.changed ? `Resumed queue ${r.id}.` : `Queue ${r.id} was not paused.`),
  });
  const runningOf = (id: string) => overview.data?.find((q) => q.queue_id === id)?.running ?? 0;

  /** Pause and drain both stop claims at once; the dialog says how many jobs that holds back. */
  const confirmStop = (kind: "pause" | "drain", id: string) => {
    const c = overview.data?.find((q) => q.queue_id === id)?.counts;
    const ready = c?.READY ?? 0;
    const retrying = c?.RETRY_WAIT ?? 0;
    const running = c?.RUNNING ?? 0;
    const verb = kind === "pause" ? "Pause" : "Drain";
    (kind === "pause" ? pause : drain).confirm({
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
      input: ({ reason }) => ({ id, reason }),
    });
  };

  return (
    <ConfigPage
      title="Queues"
      noun="queue"
      intro="Each queue belongs to a pool (lane) and carries its priorities, caps, lease, retry ceiling and backoff. Pausing stops new claims at once; draining pauses and lets running jobs finish."
      query={list}
      fields={fields(
        (pools.data ?? []).map((p) => p.id),
        (resourceKeys.data ?? []).map((k) => k.id),
      )}
      createSchema={ZQueueCreate}
      editSchema={ZQueueFields}
      defaults={{ ...createDefaults(QUEUE), pool_id: pools.data?.[0]?.id ?? "" }}
      create={trpc.queues.create.mutationOptions()}
      update={trpc.queues.update.mutationOptions()}
      refreshes={refreshes}
      emptyHint={<>Create a pool first, then its queues.</>}
      columns={[
        { header: "Queue", cell: (q) => <Link href={`/queues/${encodeURIComponent(q.id)}`}>{q.id}</Link> },
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
      {...(viewer.can("operator")
        ? {
            rowActions: (q: Queue) =>
              q.paused ? (
                <button
                  type="button"
                  className="button small"
                  onClick={() => resume.run({ id: q.id })}
                  disabled={resume.isPending}
                  aria-label={`Resume queue ${q.id}`}
                >
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
              ),
          }
        : {})}
    />
  );
}

const jobs = (n: number, noun: string) => `${count(n)} ${noun}${n === 1 ? "" : "s"}`;
