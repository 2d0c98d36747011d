"use client";
import type { TJobFilter } from "@porter/api/schemas/jobs";
import { JOB_STATES, type TJobState } from "@porter/contracts";
import { useInfiniteQuery, useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { usePathname, useRouter, useSearchParams } from "next/navigation";
import { useEffect, useMemo, useState, type FormEvent } from "react";
import { StateBadge, Tag } from "../../../components/badges";
import { CopyId } from "../../../components/copy-id";
import { useJobAction, type JobAction } from "../../../components/bulk-actions";
import { useViewer } from "../../../components/providers";
import { Empty, ErrorState, Loading } from "../../../components/states";
import { ago, count, dateTime, idTail } from "../../../lib/format";
import { useTRPC } from "../../../lib/trpc";

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

export function JobsView() {
  const trpc = useTRPC();
  const viewer = useViewer();
  const router = useRouter();
  const pathname = usePathname();
  const searchParams = useSearchParams();
  const filter = useMemo(() => filterFromParams(new URLSearchParams(searchParams.toString())), [searchParams]);
  const { states: _states, ...unstated } = filter;
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const action = useJobAction(() => setSelected(new Set()));

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
  const pages = useInfiniteQuery(
    trpc.jobs.list.infiniteQueryOptions({ filter, limit: 50 }, { getNextPageParam: (last) => last.next_cursor ?? undefined, refetchInterval: 10_000 }),
  );
  const jobs = pages.data?.pages.flatMap((p) => p.jobs) ?? [];
  useEffect(() => setSelected((s) => new Set([...s].filter((id) => jobs.some((j) => j.job_id === id)))), [pages.data]); // eslint-disable-line react-hooks/exhaustive-deps

  const activeState = filter.states?.length === 1 ? filter.states[0] : filter.states?.length ? "several" : null;
  const total = counts.data ? Object.values(counts.data).reduce((a, b) => a + b, 0) : undefined;
  const canOperate = viewer.can("operator");
  const hasFilter = Object.keys(filter).length > 0;

  const bulk = (kind: JobAction, scope: "selected" | "matching") => {
    if (scope === "selected") action.start(kind, { job_ids: [...selected] }, `${selected.size} selected job${selected.size === 1 ? "" : "s"}`);
    else action.start(kind, { filter }, hasFilter ? "Every job matching the current filter" : "Every job (no filter)");
  };

  return (
    <section aria-labelledby="page-title">
      <header className="page-head">
        <div>
          <h1 id="page-title">Jobs</h1>
          <p className="intro">Live and finished jobs, newest first. Filters are kept in the address, so a view can be shared.</p>
        </div>
      </header>

      <div className="browser">
        <aside className="state-sidebar" aria-label="Jobs by state">
          <ul>
            <li>
              <button type="button" className="state-link" aria-pressed={activeState === null} onClick={() => setParams({ state: null })}>
                <span>All</span> <span className="num">{total === undefined ? "…" : count(total)}</span>
              </button>
            </li>
            {JOB_STATES.map((s) => (
              <li key={s}>
                <button type="button" className={`state-link state-${s.toLowerCase()}`} aria-pressed={activeState === s} onClick={() => setParams({ state: s })}>
                  <span>{s}</span> <span className="num">{counts.data ? count(counts.data[s]) : "…"}</span>
                </button>
              </li>
            ))}
          </ul>
          {counts.error ? <p className="form-error small">Counts unavailable</p> : null}
        </aside>

        <div className="browser-main">
          <FilterForm filter={filter} onApply={(change) => setParams(change)} />

          {action.notice ? (
            <p className={`flash flash-${action.notice.tone}`} role="status">
              {action.notice.text}
            </p>
          ) : null}

          {canOperate ? (
            <div className="bulk-bar" role="toolbar" aria-label="Bulk actions">
              <span className="bulk-scope">{selected.size ? `${selected.size} selected:` : "Select jobs, or act on everything matching:"}</span>
              {selected.size ? (
                <>
                  <button type="button" className="button small" onClick={() => bulk("cancel", "selected")}>
                    Cancel selected
                  </button>
                  <button type="button" className="button small" onClick={() => bulk("retry", "selected")}>
                    Retry selected now
                  </button>
                  <button type="button" className="button small" onClick={() => bulk("redrive", "selected")}>
                    Redrive selected
                  </button>
                  <button type="button" className="button small ghost" onClick={() => setSelected(new Set())}>
                    Clear selection
                  </button>
                </>
              ) : (
                <>
                  <button type="button" className="button small" onClick={() => bulk("cancel", "matching")}>
                    Cancel all matching…
                  </button>
                  <button type="button" className="button small" onClick={() => bulk("retry", "matching")}>
                    Retry all matching…
                  </button>
                  <button type="button" className="button small" onClick={() => bulk("redrive", "matching")}>
                    Redrive all matching…
                  </button>
                </>
              )}
            </div>
          ) : null}

          {pages.isPending ? (
            <Loading label="Loading jobs…" />
          ) : pages.error ? (
            <ErrorState error={pages.error} onRetry={() => void pages.refetch()} />
          ) : jobs.length === 0 ? (
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
          ) : (
            <>
              <div className="table-wrap">
                <table className="grid jobs">
                  <thead>
                    <tr>
                      {canOperate ? (
                        <th scope="col" className="check-col">
                          <input
                            type="checkbox"
                            aria-label="Select every job shown"
                            checked={selected.size > 0 && selected.size === jobs.length}
                            onChange={(e) => setSelected(e.target.checked ? new Set(jobs.map((j) => j.job_id)) : new Set())}
                          />
                        </th>
                      ) : null}
                      <th scope="col">Job</th>
                      <th scope="col">State</th>
                      <th scope="col">Type · queue</th>
                      <th scope="col">Tenant</th>
                      <th scope="col" className="num">
                        Attempt
                      </th>
                      <th scope="col">Created</th>
                      <th scope="col">Next run · finished</th>
                      <th scope="col">Last error</th>
                    </tr>
                  </thead>
                  <tbody>
                    {jobs.map((j) => (
                      <tr key={j.job_id} className={selected.has(j.job_id) ? "selected" : undefined}>
                        {canOperate ? (
                          <td className="check-col">
                            <input
                              type="checkbox"
                              aria-label={`Select job ${j.job_id}`}
                              checked={selected.has(j.job_id)}
                              onChange={(e) =>
                                setSelected((s) => {
                                  const next = new Set(s);
                                  if (e.target.checked) next.add(j.job_id);
                                  else next.delete(j.job_id);
                                  return next;
                                })
                              }
                            />
                          </td>
                        ) : null}
                        <th scope="row" className="id-cell">
                          <Link className="mono" href={`/jobs/${j.job_id}`} title={j.job_id} data-testid="job-id">
                            {idTail(j.job_id)}
                          </Link>{" "}
                          <CopyId id={j.job_id} label="job id" />
                        </th>
                        <td>
                          <StateBadge state={j.state} /> {j.cancel_requested && j.state === "RUNNING" ? <Tag tone="warn">cancel requested</Tag> : null}
                        </td>
                        <td>
                          <span className="stack">
                            <span>{j.job_type}</span>
                            <span className="muted small">{j.queue_id}</span>
                          </span>
                        </td>
                        <td>{j.tenant_id}</td>
                        <td className="num">
                          {j.attempt} / {j.max_attempts}
                        </td>
                        <td title={dateTime(j.created_at)}>{ago(j.created_at)}</td>
                        <td title={dateTime(j.finished_at ?? j.run_at)}>{j.finished_at ? ago(j.finished_at) : j.run_at ? ago(j.run_at) : "—"}</td>
                        <td className="error-cell" title={j.error_message ?? undefined}>
                          {j.error_code ? <code>{j.error_code}</code> : null} {j.error_message ?? ""}
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
              <div className="pager">
                <span className="muted">
                  Showing {count(jobs.length)}
                  {total !== undefined && activeState === null ? ` of ${count(total)}` : ""}
                </span>
                {pages.hasNextPage ? (
                  <button type="button" className="button" onClick={() => void pages.fetchNextPage()} disabled={pages.isFetchingNextPage}>
                    {pages.isFetchingNextPage ? "Loading…" : "Load more"}
                  </button>
                ) : null}
              </div>
            </>
          )}
        </div>
      </div>
      {action.element}
    </section>
  );
}

/** Filter inputs; applied on submit (Enter in any field), cleared by Reset. */
function FilterForm({ filter, onApply }: { filter: TJobFilter; onApply: (change: Record<string, string | null>) => void }) {
  const trpc = useTRPC();
  const queues = useQuery(trpc.queues.list.queryOptions());
  const types = useQuery(trpc.jobTypes.list.queryOptions());
  const tenants = useQuery(trpc.tenants.list.queryOptions());
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
    });
  };
  const reset = () => onApply(Object.fromEntries(["queue", "type", "tenant", "from", "to", "key", "job", "trace", "state"].map((k) => [k, null])));

  return (
    <form className="filters" onSubmit={submit} aria-label="Filter jobs" key={JSON.stringify(filter)}>
      <label>
        Queue
        <select name="queue" defaultValue={filter.queue_id ?? ""}>
          <option value="">any</option>
          {(queues.data ?? []).map((q) => (
            <option key={q.id} value={q.id}>
              {q.id}
            </option>
          ))}
        </select>
      </label>
      <label>
        Job type
        <select name="type" defaultValue={filter.job_type ?? ""}>
          <option value="">any</option>
          {(types.data ?? []).map((t) => (
            <option key={t.id} value={t.id}>
              {t.id}
            </option>
          ))}
        </select>
      </label>
      <label>
        Tenant
        <select name="tenant" defaultValue={filter.tenant_id ?? ""}>
          <option value="">any</option>
          {(tenants.data ?? []).map((t) => (
            <option key={t.id} value={t.id}>
              {t.id}
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
        <input name="job" defaultValue={filter.job_id ?? ""} autoComplete="off" aria-invalid={jobIdError ? true : undefined} aria-describedby={jobIdError ? "job-id-error" : undefined} />
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
