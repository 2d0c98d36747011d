"use client";
import { JOB_STATES, type TJobState } from "@porter/contracts";
import { useInfiniteQuery, useQuery } from "@tanstack/react-query";
import { usePathname, useRouter, useSearchParams } from "next/navigation";
import { type FormEvent, useEffect, useMemo, useState } from "react";
import { StateBadge, Tag } from "../../../components/badges";
import { JobIdCell } from "../../../components/copy-id";
import { type Column, cursorList, DataTable } from "../../../components/data-table";
import { LongText } from "../../../components/dlq";
import { type JobAction, useJobActions } from "../../../components/job-actions";
import { Page } from "../../../components/page";
import { useViewer } from "../../../components/providers";
import { Empty } from "../../../components/states";
import { ago, count, dateTime } from "../../../lib/format";
import { PAGE_SIZE } from "../../../lib/paging";
import { type RouterInputs, type RouterOutputs, useTRPC } from "../../../lib/trpc";

type TJobFilter = NonNullable<RouterInputs["jobs"]["list"]["filter"]>;

// URL parameter ↔ filter field. The URL is the filter: a view can be shared or bookmarked.
const PARAMS = {
  queue: "queue_id",
  type: "job_type",
  tenant: "tenant_id",
  from: "from",
  to: "to",
  key: "idempotency_key",
  job: "job_id",
  trace: "trace_id",
  code: "error_code",
} as const satisfies Record<string, keyof TJobFilter>;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const filterFromParams = (params: URLSearchParams): TJobFilter => {
  const filter: TJobFilter = {};
  const states = (params.get("state") ?? "").split(",").filter((s): s is TJobState => (JOB_STATES as readonly string[]).includes(s));
  if (states.length) filter.states = states;
  for (const [param, field] of Object.entries(PARAMS)) {
    const value = params.get(param)?.trim();
    if (!value) continue;
    if (field === "job_id" && !UUID.test(value)) continue;
    if ((field === "from" || field === "to") && Number.isNaN(Date.parse(value))) continue;
    (filter as Record<string, string>)[field] = value;
  }
  return filter;
};

/** `2026-11-30T14:03` for a datetime-local input, from an ISO instant. */
const toLocalInput = (iso: string | undefined) => {
  if (!iso) return "";
  const d = new Date(iso);
  const pad = (n: number) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
};

type Job = RouterOutputs["jobs"]["list"]["jobs"][number];

const COLUMNS: ReadonlyArray<Column<Job>> = [
  {
    header: "Job",
    className: "id-cell",
    cell: (j) => <JobIdCell jobId={j.job_id} testId="job-id" />,
  },
  {
    header: "State",
    cell: (j) => (
      <>
        <StateBadge state={j.state} /> {j.cancel_requested && j.state === "RUNNING" ? <Tag tone="warn">cancel requested</Tag> : null}
      </>
    ),
  },
  {
    header: "Type · queue",
    cell: (j) => (
      <span className="stack">
        <span>{j.job_type}</span>
        <span className="muted small">{j.queue_id}</span>
      </span>
    ),
  },
  { header: "Tenant", cell: (j) => j.tenant_id },
  { header: "Attempt", isNumeric: true, cell: (j) => `${j.attempt} / ${j.max_attempts}` },
  { header: "Created", cell: (j) => <span title={dateTime(j.created_at)}>{ago(j.created_at)}</span> },
  {
    header: "Next run · finished",
    cell: (j) => <span title={dateTime(j.finished_at ?? j.run_at)}>{j.finished_at ? ago(j.finished_at) : j.run_at ? ago(j.run_at) : "—"}</span>,
  },
  {
    header: "Last error",
    className: "error-cell",
    isWrapping: true,
    cell: (j) => (
      <span className="error-text">
        {j.error_code ? <code>{j.error_code}</code> : null} {j.error_message ? <LongText text={j.error_message} max={80} /> : null}
      </span>
    ),
  },
];

const BULK: ReadonlyArray<{ action: JobAction; selected: string; matching: string }> = [
  { action: "cancel", selected: "Cancel selected", matching: "Cancel all matching…" },
  { action: "retry", selected: "Retry selected now", matching: "Retry all matching…" },
  { action: "redrive", selected: "Redrive selected", matching: "Redrive all matching…" },
];

export function JobsView() {
  const trpc = useTRPC();
  const viewer = useViewer();
  const router = useRouter();
  const pathname = usePathname();
  const searchParams = useSearchParams();
  const filter = useMemo(() => filterFromParams(new URLSearchParams(searchParams.toString())), [searchParams]);
  const { states: _states, ...unstated } = filter;
  const [selected, setSelected] = useState<ReadonlySet<string>>(new Set());
  const actions = useJobActions(() => setSelected(new Set()));

  const setParams = (change: Record<string, string | null>) => {
    const next = new URLSearchParams(searchParams.toString());
    for (const [k, v] of Object.entries(change)) {
      if (v === null || v === "") next.delete(k);
      else next.set(k, v);
    }
    setSelected(new Set());
    const qs = next.toString();
    router.replace(qs ? `${pathname}?${qs}` : pathname, { scroll: false });
  };

  const counts = useQuery({ ...trpc.jobs.counts.queryOptions({ filter: unstated }), refetchInterval: 5_000 });
  const jobs = cursorList(
    useInfiniteQuery(
      trpc.jobs.list.infiniteQueryOptions({ filter, limit: PAGE_SIZE }, { getNextPageParam: (last) => last.next_cursor ?? undefined, refetchInterval: 10_000 }),
    ),
    (page) => page.jobs,
  );
  // A refresh drops jobs that left the filter (finished, moved on) from the selection.
  const shownIds = (jobs.data ?? []).map((j) => j.job_id).join(",");
  useEffect(() => {
    const shown = new Set(shownIds.split(","));
    setSelected((s) => (s.size && [...s].some((id) => !shown.has(id)) ? new Set([...s].filter((id) => shown.has(id))) : s));
  }, [shownIds]);

  const activeState = filter.states?.length === 1 ? filter.states[0] : filter.states?.length ? "several" : null;
  const total = counts.data ? Object.values(counts.data).reduce((a, b) => a + b, 0) : undefined;
  const canOperate = viewer.can("operator");
  const hasFilter = Object.keys(filter).length > 0;

  const bulk = (action: JobAction, scope: "selected" | "matching") => {
    if (scope === "selected") actions.start(action, { job_ids: [...selected] }, `${selected.size} selected job${selected.size === 1 ? "" : "s"}`);
    else actions.start(action, { filter }, hasFilter ? "Every job matching the current filter" : "Every job (no filter)");
  };

  return (
    <Page title="Jobs" description="Live and finished jobs, newest first. Filters are kept in the address, so a view can be shared.">
      <div className="browser">
        <aside className="state-sidebar" aria-label="Jobs by state">
          <ul className="state-list">
            <li>
              <button type="button" className="state-link" aria-pressed={activeState === null} onClick={() => setParams({ state: null })}>
                <span>All</span> <span className="num">{total === undefined ? "…" : count(total)}</span>
              </button>
            </li>
            {JOB_STATES.map((s) => (
              <li key={s}>
                <button
                  type="button"
                  className={`state-link state-${s.toLowerCase()}`}
                  aria-pressed={activeState === s}
                  onClick={() => setParams({ state: s })}
                >
                  <span>{s}</span> <span className="num">{counts.data ? count(counts.data[s]) : "…"}</span>
                </button>
              </li>
            ))}
          </ul>
          {counts.error ? <p className="form-error small">Counts unavailable</p> : null}
        </aside>

        <div className="browser-main">
          <FilterForm filter={filter} onApply={(change) => setParams(change)} />

          {canOperate ? (
            <div className="bulk-bar" role="toolbar" aria-label="Bulk actions">
              <span className="bulk-scope">{selected.size ? `${selected.size} selected:` : "Select jobs, or act on everything matching:"}</span>
              {BULK.map((b) => (
                <button key={b.action} type="button" className="button small" onClick={() => bulk(b.action, selected.size ? "selected" : "matching")}>
                  {selected.size ? b.selected : b.matching}
                </button>
              ))}
              {selected.size ? (
                <button type="button" className="button small ghost" onClick={() => setSelected(new Set())}>
                  Clear selection
                </button>
              ) : null}
            </div>
          ) : null}

          <DataTable
            query={jobs}
            columns={COLUMNS}
            rowKey={(j) => j.job_id}
            className="jobs"
            caption="Jobs"
            loadingLabel="Loading jobs…"
            {...(total !== undefined && activeState === null ? { total } : {})}
            {...(canOperate
              ? { selection: { selected, onChange: setSelected, label: (j: Job) => `Select job ${j.job_id}`, allLabel: "Select every job shown" } }
              : {})}
            empty={
              <Empty title={hasFilter ? "No job matches this filter" : "No jobs yet"}>
                {hasFilter ? (
                  <button type="button" className="button small" onClick={() => router.replace(pathname)}>
                    Clear the filter
                  </button>
                ) : (
                  <>
                    Enqueue one through the producer API (<code>POST /api/trpc/producer.enqueue</code>) or{" "}
                    <code>npm run porter -- enqueue --type diag.sleep --tenant tenant_A --payload {"'{\"ms\":100}'"}</code>.
                  </>
                )}
              </Empty>
            }
          />
        </div>
      </div>
    </Page>
  );
}

/** Filter inputs; applied on submit (Enter in any field), cleared by Reset. */
function FilterForm({ filter, onApply }: { filter: TJobFilter; onApply: (change: Record<string, string | null>) => void }) {
  const trpc = useTRPC();
  const queues = useQuery(trpc.queues.list.queryOptions());
  const types = useQuery(trpc.jobTypes.list.queryOptions());
  const tenants = useQuery(trpc.tenants.list.queryOptions());
  const errorCodes = useQuery(trpc.jobs.errorCodes.queryOptions({}));
  const [jobIdError, setJobIdError] = useState<string | null>(null);

  const submit = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const data = new FormData(event.currentTarget);
    const text = (name: string) => String(data.get(name) ?? "").trim();
    const job = text("job");
    if (job && !UUID.test(job)) {
      setJobIdError("A job id is a uuid, e.g. 1b4e28ba-2fa1-11d2-883f-0016d3cca427");
      return;
    }
    setJobIdError(null);
    const instant = (name: string) => (text(name) ? new Date(text(name)).toISOString() : null);
    onApply({
      queue: text("queue") || null,
      type: text("type") || null,
      tenant: text("tenant") || null,
      from: instant("from"),
      to: instant("to"),
      key: text("key") || null,
      job: job || null,
      trace: text("trace") || null,
      code: text("code") || null,
    });
  };
  const reset = () => onApply(Object.fromEntries(["queue", "type", "tenant", "from", "to", "key", "job", "trace", "code", "state"].map((k) => [k, null])));

  return (
    <form className="filters" onSubmit={submit} aria-label="Filter jobs" key={JSON.stringify(filter)}>
      <AnyOf label="Queue" name="queue" value={filter.queue_id} rows={queues.data} />
      <AnyOf label="Job type" name="type" value={filter.job_type} rows={types.data} />
      <AnyOf label="Tenant" name="tenant" value={filter.tenant_id} rows={tenants.data} />
      <label>
        Error code
        <select name="code" defaultValue={filter.error_code ?? ""} key={errorCodes.data?.codes.length ?? -1}>
          <option value="">any</option>
          {filter.error_code && !errorCodes.data?.codes.some((c) => c.code === filter.error_code) ? (
            <option value={filter.error_code}>{filter.error_code}</option>
          ) : null}
          {(errorCodes.data?.codes ?? []).map((c) => (
            <option key={c.code} value={c.code}>
              {c.code} ({count(c.count)} dead)
            </option>
          ))}
        </select>
      </label>
      <label>
        Created from
        <input type="datetime-local" name="from" defaultValue={toLocalInput(filter.from)} />
      </label>
      <label>
        Created before
        <input type="datetime-local" name="to" defaultValue={toLocalInput(filter.to)} />
      </label>
      <label>
        Idempotency key
        <input name="key" defaultValue={filter.idempotency_key ?? ""} autoComplete="off" />
      </label>
      <label>
        Job id
        <input
          name="job"
          defaultValue={filter.job_id ?? ""}
          autoComplete="off"
          aria-invalid={jobIdError ? true : undefined}
          aria-describedby={jobIdError ? "job-id-error" : undefined}
        />
        {jobIdError ? (
          <small id="job-id-error" className="field-error" role="alert">
            {jobIdError}
          </small>
        ) : null}
      </label>
      <label>
        Trace id
        <input name="trace" defaultValue={filter.trace_id ?? ""} autoComplete="off" />
      </label>
      <div className="filter-actions">
        <button type="submit" className="button primary">
          Apply
        </button>
        <button type="button" className="button" onClick={reset}>
          Reset
        </button>
      </div>
    </form>
  );
}

/** A filter select: "any", or one of the control-plane objects by id. */
function AnyOf({ label, name, value, rows }: { label: string; name: string; value: string | undefined; rows: ReadonlyArray<{ id: string }> | undefined }) {
  return (
    <label>
      {label}
      <select name={name} defaultValue={value ?? ""}>
        <option value="">any</option>
        {(rows ?? []).map((r) => (
          <option key={r.id} value={r.id}>
            {r.id}
          </option>
        ))}
      </select>
    </label>
  );
}
