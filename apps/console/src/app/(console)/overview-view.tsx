"use client";
import { JOB_STATES } from "@porter/contracts";
import { useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { Tag } from "../../components/badges";
import { type Column, DataTable } from "../../components/data-table";
import { FlowCharts } from "../../components/flow-charts";
import { Page } from "../../components/page";
import { Empty, ErrorState, Loading } from "../../components/states";
import { count, duration } from "../../lib/format";
import { type RouterOutputs, useTRPC } from "../../lib/trpc";

type QueueRow = RouterOutputs["overview"]["queues"][number];
type PoolHealth = RouterOutputs["overview"]["health"][number];
type QueueSignals = RouterOutputs["overview"]["signals"]["queues"][number];
type Row = QueueRow & { signals?: QueueSignals };

const jobsLink = (queue: string, state?: string) => `/jobs?queue=${encodeURIComponent(queue)}${state ? `&state=${state}` : ""}`;
/** The queue page: signals, flow charts, tenants and job types. */
export const queueLink = (queue: string) => `/queues/${encodeURIComponent(queue)}`;
const seconds = (s: number | null | undefined) => (s === null || s === undefined ? "—" : s === 0 ? "0 s" : duration(s * 1000));

/** Rates over the signals' window: per second when busy, per minute below 1/s. */
const rate = (perS: number) => (perS >= 1 ? `${perS.toFixed(1)}/s` : `${(perS * 60).toFixed(1)}/min`);

/** The states with a column of their own; RUNNING is the Running / cap column, the rest fold into "Other states". */
const OWN_COLUMN_STATES = ["READY", "SUCCEEDED", "DEAD"] as const;
const OTHER_STATES = [
  ["RETRY_WAIT", "retry wait"],
  ["CANCELLED", "cancelled"],
  ["EXPIRED", "expired"],
] as const;

/**
 * Ten columns, so the table fits a 1280 px window without scrolling sideways: every state's count
 * is still on the row (RUNNING in Running / cap, the rarer states named in "Other states"), each a
 * link to the jobs of that queue and state.
 */
const COLUMNS: ReadonlyArray<Column<Row>> = [
  {
    header: "Queue",
    isWrapping: true,
    cell: (q) => (
      <>
        <Link href={queueLink(q.queue_id)}>{q.queue_id}</Link> {q.paused ? <Tag tone="warn">paused</Tag> : null}
        {q.signals?.status === "at_risk" ? <Tag tone="bad">at risk</Tag> : q.signals?.status === "growing" ? <Tag tone="warn">growing</Tag> : null}
      </>
    ),
  },
  { header: "Pool", isWrapping: true, cell: (q) => q.pool_id },
  ...OWN_COLUMN_STATES.map(
    (s): Column<Row> => ({
      header: s,
      isNumeric: true,
      headerClassName: `state-${s.toLowerCase()}`,
      cell: (q) => (q.counts[s] ? <Link href={jobsLink(q.queue_id, s)}>{count(q.counts[s])}</Link> : <span className="muted">0</span>),
    }),
  ),
  {
    header: "Other states",
    isWrapping: true,
    cell: (q) => {
      const shown = OTHER_STATES.filter(([s]) => q.counts[s] > 0);
      return shown.length ? (
        <span className="other-states">
          {shown.map(([s, label]) => (
            <Link key={s} href={jobsLink(q.queue_id, s)}>
              {count(q.counts[s])} {label}
            </Link>
          ))}
        </span>
      ) : (
        <span className="muted" title="No job retrying, cancelled or expired">
          none
        </span>
      );
    },
  },
  { header: "Oldest ready", isNumeric: true, cell: (q) => (q.oldest_ready_age_s === null ? "—" : duration(q.oldest_ready_age_s * 1000)) },
  { header: "Backlog", isNumeric: true, cell: (q) => (q.signals?.has_no_concurrency ? "no worker" : seconds(q.signals?.backlog_s)) },
  { header: "Running / cap", cell: (q) => <CapBar running={q.running} cap={q.concurrency_cap} href={jobsLink(q.queue_id, "RUNNING")} /> },
  { header: "Done 5 min", isNumeric: true, cell: (q) => count(q.finished_last_5m) },
];

export function OverviewView() {
  const trpc = useTRPC();
  const queues = useQuery({ ...trpc.overview.queues.queryOptions(), refetchInterval: 5_000 });
  const health = useQuery({ ...trpc.overview.health.queryOptions(), refetchInterval: 5_000 });
  const signals = useQuery({ ...trpc.overview.signals.queryOptions({}), refetchInterval: 5_000 });
  const signalsOf = new Map((signals.data?.queues ?? []).map((q) => [q.queue_id, q]));
  const rows = { ...queues, data: queues.data?.map((q): Row => ({ ...q, signals: signalsOf.get(q.queue_id) })) };

  const totals = Object.fromEntries(JOB_STATES.map((s) => [s, (queues.data ?? []).reduce((n, q) => n + q.counts[s], 0)]));
  const oldest = Math.max(0, ...(queues.data ?? []).map((q) => q.oldest_ready_age_s ?? 0));

  return (
    <Page
      title="Overview"
      description="Backlog, age and flow per queue. Refreshes every few seconds."
      actions={<HealthBadge isDown={Boolean(queues.error || health.error)} isPending={queues.isPending || health.isPending} pools={health.data ?? []} />}
    >
      <NeedsAttention query={signals} />
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
          query={rows}
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
      <FlowCharts scope={{}} />
    </Page>
  );
}

/**
 * What is wrong first: queues at risk (projected wait above their target, with the numbers), then
 * queues whose backlog grows (arrivals ≥ completions with work ready), else a calm line.
 */
function NeedsAttention({
  query,
}: {
  query: { data?: { queues: QueueSignals[]; window_s: number }; error: unknown; isPending: boolean; refetch: () => unknown };
}) {
  const title = (
    <h2 id="attention-title" className="attention-title">
      Needs attention
    </h2>
  );
  if (query.isPending)
    return (
      <section aria-labelledby="attention-title">
        {title}
        <Loading label="Reading the signals…" />
      </section>
    );
  if (query.error || !query.data)
    return (
      <section aria-labelledby="attention-title">
        {title}
        <ErrorState error={query.error} onRetry={() => void query.refetch()} title="Could not read the signals" />
      </section>
    );
  const window = duration(query.data.window_s * 1000);
  const wrong = query.data.queues.filter((q) => q.status !== "ok");
  return (
    <section aria-labelledby="attention-title" data-testid="needs-attention">
      {title}
      {wrong.length === 0 ? (
        <p className="health health-up attention-ok" role="status" data-testid="all-keeping-up">
          <span className="dot" aria-hidden="true" />
          All queues keeping up — no projected wait above its target, no backlog growing over the last {window}.
        </p>
      ) : (
        <ul className="attention">
          {wrong.map((q) => (
            <li key={q.queue_id} className={q.status === "at_risk" ? "at-risk" : "growing"} data-testid={`attention-${q.queue_id}`} data-status={q.status}>
              <Tag tone={q.status === "at_risk" ? "bad" : "warn"}>{q.status === "at_risk" ? "AT RISK" : "GROWING"}</Tag>{" "}
              <Link href={queueLink(q.queue_id)}>queue {q.queue_id}</Link>{" "}
              {q.status === "at_risk" ? (
                <span>
                  projected wait <strong>{q.has_no_concurrency ? "unbounded (no worker or cap to run on)" : seconds(q.projected_wait_s)}</strong> over the{" "}
                  {seconds(q.target_wait_s)} target
                </span>
              ) : (
                <span>
                  backlog growing:{" "}
                  <strong>{q.arrival_to_completion === null ? "nothing completed" : `${q.arrival_to_completion.toFixed(2)}× arrivals per completion`}</strong>
                </span>
              )}
              <div className="numbers">
                {count(q.ready)}
                {q.is_ready_lower_bound ? "+" : ""} ready · {count(q.running)} running of {count(q.effective_concurrency)} · oldest{" "}
                {seconds(q.oldest_claimable_age_s)} · backlog {seconds(q.backlog_s)} · {rate(q.arrival_per_s)} in, {rate(q.completion_per_s)} out · drain{" "}
                {q.drain_s === null ? "never at this rate" : seconds(q.drain_s)}
              </div>
            </li>
          ))}
        </ul>
      )}
    </section>
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
function CapBar({ running, cap, href }: { running: number; cap: number | null; href: string }) {
  const n = running ? <Link href={href}>{count(running)}</Link> : count(running);
  if (!cap)
    return (
      <span>
        {n} <span className="muted">/ no cap</span>
      </span>
    );
  const ratio = Math.min(1, running / cap);
  return (
    <span className="capbar" title={`${running} of ${cap}`}>
      <span className="capbar-track" aria-hidden="true">
        <span className={`capbar-fill${ratio >= 1 ? " full" : ""}`} style={{ width: `${ratio * 100}%` }} />
      </span>
      {n} / {count(cap)}
    </span>
  );
}
