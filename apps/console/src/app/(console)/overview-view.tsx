"use client";
import { JOB_STATES } from "@porter/contracts";
import { useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { useState } from "react";
import { Tag } from "../../components/badges";
import { type Column, DataTable } from "../../components/data-table";
import { Page } from "../../components/page";
import { Empty, ErrorState, Loading } from "../../components/states";
import { ThroughputChart } from "../../components/throughput-chart";
import { count, duration } from "../../lib/format";
import { type RouterOutputs, useTRPC } from "../../lib/trpc";

type QueueRow = RouterOutputs["overview"]["queues"][number];
type PoolHealth = RouterOutputs["overview"]["health"][number];

const jobsLink = (queue: string, state?: string) => `/jobs?queue=${encodeURIComponent(queue)}${state ? `&state=${state}` : ""}`;

const COLUMNS: ReadonlyArray<Column<QueueRow>> = [
  {
    header: "Queue",
    cell: (q) => (
      <>
        <Link href={jobsLink(q.queue_id)}>{q.queue_id}</Link> {q.paused ? <Tag tone="warn">paused</Tag> : null}
      </>
    ),
  },
  { header: "Pool", cell: (q) => q.pool_id },
  ...JOB_STATES.map(
    (s): Column<QueueRow> => ({
      header: s,
      isNumeric: true,
      headerClassName: `state-${s.toLowerCase()}`,
      cell: (q) => (q.counts[s] ? <Link href={jobsLink(q.queue_id, s)}>{count(q.counts[s])}</Link> : <span className="muted">0</span>),
    }),
  ),
  { header: "Oldest ready", isNumeric: true, cell: (q) => (q.oldest_ready_age_s === null ? "—" : duration(q.oldest_ready_age_s * 1000)) },
  { header: "Running / cap", cell: (q) => <CapBar running={q.running} cap={q.concurrency_cap} /> },
  { header: "Done 5 min", isNumeric: true, cell: (q) => count(q.finished_last_5m) },
];

export function OverviewView() {
  const trpc = useTRPC();
  const [minutes, setMinutes] = useState(15);
  const [queueFilter, setQueueFilter] = useState("");
  const queues = useQuery({ ...trpc.overview.queues.queryOptions(), refetchInterval: 5_000 });
  const health = useQuery({ ...trpc.overview.health.queryOptions(), refetchInterval: 5_000 });
  const throughput = useQuery({
    ...trpc.overview.throughput.queryOptions({ minutes, ...(queueFilter ? { queue_id: queueFilter } : {}) }),
    refetchInterval: 10_000,
  });

  const totals = Object.fromEntries(JOB_STATES.map((s) => [s, (queues.data ?? []).reduce((n, q) => n + q.counts[s], 0)]));
  const oldest = Math.max(0, ...(queues.data ?? []).map((q) => q.oldest_ready_age_s ?? 0));

  return (
    <Page
      title="Overview"
      description="Backlog, age and flow per queue. Refreshes every few seconds."
      actions={<HealthBadge isDown={Boolean(queues.error || health.error)} isPending={queues.isPending || health.isPending} pools={health.data ?? []} />}
    >
      {queues.isPending ? null : queues.error ? null : (
        <div className="cards">
          <Stat label="Ready" value={count(totals.READY)} href="/jobs?state=READY" />
          <Stat label="Running" value={count(totals.RUNNING)} href="/jobs?state=RUNNING" />
          <Stat label="Retry wait" value={count(totals.RETRY_WAIT)} href="/jobs?state=RETRY_WAIT" />
          <Stat label="Dead" value={count(totals.DEAD)} href="/jobs?state=DEAD" tone={totals.DEAD ? "bad" : undefined} />
          <Stat label="Oldest ready" value={oldest ? duration(oldest * 1000) : "—"} />
          <Stat label="Finished (5 min)" value={count((queues.data ?? []).reduce((n, q) => n + q.finished_last_5m, 0))} />
        </div>
      )}

      <section aria-labelledby="queues-title">
        <h2 id="queues-title">Queues</h2>
        <DataTable
          query={queues}
          columns={COLUMNS}
          rowKey={(q) => q.queue_id}
          className="counts"
          caption="Queues"
          loadingLabel="Loading queues…"
          empty={
            <Empty title="No queues yet">
              An admin can create one on the <Link href="/queues">Queues</Link> page, or run <code>npm run db:seed</code>.
            </Empty>
          }
        />
      </section>
      <section className="panel" aria-labelledby="throughput-title">
        <div className="panel-head">
          <h2 id="throughput-title">Throughput</h2>
          <div className="inline-controls">
            <label>
              Queue{" "}
              <select value={queueFilter} onChange={(e) => setQueueFilter(e.target.value)}>
                <option value="">all queues</option>
                {(queues.data ?? []).map((q) => (
                  <option key={q.queue_id} value={q.queue_id}>
                    {q.queue_id}
                  </option>
                ))}
              </select>
            </label>
            <label>
              Window{" "}
              <select value={minutes} onChange={(e) => setMinutes(Number(e.target.value))}>
                <option value={15}>15 min</option>
                <option value={60}>1 hour</option>
                <option value={180}>3 hours</option>
              </select>
            </label>
          </div>
        </div>
        {throughput.isPending ? (
          <Loading label="Loading throughput…" />
        ) : throughput.error ? (
          <ErrorState error={throughput.error} onRetry={() => void throughput.refetch()} />
        ) : (
          <ThroughputChart points={throughput.data} />
        )}
        <p className="muted small">Jobs finished per minute by outcome. Latency percentiles and arrival rates will join this panel.</p>
      </section>
    </Page>
  );
}

/**
 * Healthy only when the database answers and every pool with queues has a live worker; otherwise
 * it names the pools nobody serves, those with jobs waiting first (they are stuck).
 */
function HealthBadge({ isDown, isPending, pools }: { isDown: boolean; isPending: boolean; pools: PoolHealth[] }) {
  if (isDown || isPending) {
    return (
      <p className={`health health-${isDown ? "down" : "up"}`} role="status">
        <span className="dot" aria-hidden="true" />
        {isDown ? "Cannot read the database" : "Checking…"}
      </p>
    );
  }
  const unserved = pools.filter((p) => p.queues > 0 && p.live_workers === 0).sort((a, b) => b.waiting - a.waiting);
  const stuck = unserved.filter((p) => p.waiting > 0);
  if (unserved.length === 0) {
    return (
      <p className="health health-up" role="status" data-testid="health">
        <span className="dot" aria-hidden="true" />
        Healthy — database up, every pool has a live worker
      </p>
    );
  }
  const what = (p: PoolHealth) =>
    `${p.pool_id} (${p.waiting ? `${count(p.waiting)} job${p.waiting === 1 ? "" : "s"} waiting` : "nothing waiting"}${p.lost_workers ? `, ${p.lost_workers} lost` : ""})`;
  return (
    <div className={`health health-${stuck.length ? "down" : "warn"}`} role="status" data-testid="health">
      <span className="dot" aria-hidden="true" />
      <span>
        <strong>{stuck.length ? "Not healthy" : "Database up"}</strong> — no live worker for pool{unserved.length === 1 ? "" : "s"}{" "}
        {unserved.map((p, i) => (
          <span key={p.pool_id}>
            {i ? ", " : ""}
            <Link href="/pools">{what(p)}</Link>
          </span>
        ))}
      </span>
    </div>
  );
}

function Stat({ label, value, href, tone }: { label: string; value: string; href?: string; tone?: "bad" }) {
  const body = (
    <>
      <span className="stat-label">{label}</span>
      <span className="stat-value">{value}</span>
    </>
  );
  return href ? (
    <Link className={`card stat${tone ? ` stat-${tone}` : ""}`} href={href}>
      {body}
    </Link>
  ) : (
    <div className={`card stat${tone ? ` stat-${tone}` : ""}`}>{body}</div>
  );
}

/** Running jobs against the queue's concurrency cap (no bar without a cap). */
function CapBar({ running, cap }: { running: number; cap: number | null }) {
  if (!cap)
    return (
      <span>
        {count(running)} <span className="muted">/ no cap</span>
      </span>
    );
  const ratio = Math.min(1, running / cap);
  return (
    <span className="capbar" title={`${running} of ${cap}`}>
      <span className="capbar-track" aria-hidden="true">
        <span className={`capbar-fill${ratio >= 1 ? " full" : ""}`} style={{ width: `${ratio * 100}%` }} />
      </span>
      {count(running)} / {count(cap)}
    </span>
  );
}
