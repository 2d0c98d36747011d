"use client";
import { DLQ_STATUSES, type TGroupSummary } from "@porter/api/schemas/dlq";
import { useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { usePathname, useRouter, useSearchParams } from "next/navigation";
import type { FormEvent } from "react";
import { DlqStatusBadge, LongText, statusLabel } from "../../../components/dlq";
import { Page } from "../../../components/page";
import { Sparkline } from "../../../components/sparkline";
import { Empty, ErrorState, Loading } from "../../../components/states";
import { GROUP_FILTER_PARAMS, GROUPS_PER_PAGE, type GroupListParams, type GroupSort, groupListFromParams, nextSort } from "../../../lib/dlq-params";
import { ago, count, dateTime } from "../../../lib/format";
import { useTRPC } from "../../../lib/trpc";
import { DeadLetterTabs } from "./tabs";

type ListInput = GroupListParams;
type Sort = GroupSort;
const LIMIT = GROUPS_PER_PAGE;

export function DeadLettersView() {
  const trpc = useTRPC();
  const router = useRouter();
  const pathname = usePathname();
  const searchParams = useSearchParams();
  const { page, input } = groupListFromParams(new URLSearchParams(searchParams.toString()));
  const groups = useQuery({ ...trpc.dlq.groups.list.queryOptions(input), refetchInterval: 10_000 });

  const setParams = (change: Record<string, string | null>, keepPage = false) => {
    const next = new URLSearchParams(searchParams.toString());
    for (const [k, v] of Object.entries(change)) {
      if (v === null || v === "") next.delete(k);
      else next.set(k, v);
    }
    if (!keepPage) next.delete("page");
    const qs = next.toString();
    router.replace(qs ? `${pathname}?${qs}` : pathname, { scroll: false });
  };
  const sort = input.sort ?? "last_seen";
  const order = input.order ?? "desc";
  const onSort = (column: Sort) => setParams(nextSort({ sort, order }, column));
  const hasFilter = GROUP_FILTER_PARAMS.some((k) => searchParams.has(k));

  return (
    <Page
      title="Dead letters"
      description="Dead jobs grouped by failure fingerprint (job type, error code and class, the message with ids and numbers taken out). Own a group, say why it failed, and redrive it once the cause is fixed."
    >
      <DeadLetterTabs />
      <GroupFilters input={input} onApply={setParams} onReset={() => router.replace(pathname)} />
      {groups.isPending ? (
        <Loading label="Loading failure groups…" />
      ) : groups.error ? (
        <ErrorState error={groups.error} onRetry={() => void groups.refetch()} title="Could not load the failure groups" />
      ) : groups.data.groups.length === 0 ? (
        hasFilter || page ? (
          <Empty title="No failure group matches this filter">
            <button type="button" className="button small" onClick={() => router.replace(pathname)}>
              Clear the filter
            </button>
          </Empty>
        ) : (
          <Empty title="No dead jobs — nothing to triage">Jobs that exhaust their attempts or fail permanently land here, grouped by what went wrong.</Empty>
        )
      ) : (
        <>
          <GroupsTable groups={groups.data.groups} sort={sort} order={order} onSort={onSort} />
          <nav className="pager" aria-label="Pages of failure groups">
            <span className="muted">
              Showing {count(page * LIMIT + 1)}–{count(page * LIMIT + groups.data.groups.length)} of {count(groups.data.total)}
            </span>
            <span className="row-actions">
              <button type="button" className="button" disabled={page === 0} onClick={() => setParams({ page: page > 1 ? String(page - 1) : null }, true)}>
                Previous
              </button>
              <button type="button" className="button" disabled={groups.data.next_cursor === null} onClick={() => setParams({ page: String(page + 1) }, true)}>
                Next
              </button>
            </span>
          </nav>
        </>
      )}
    </Page>
  );
}

/** A button that sorts the list by `column` (descending first, again to flip). */
function SortButton({ label, column, sort, order, onSort }: { label: string; column: Sort; sort: Sort; order: "asc" | "desc"; onSort: (c: Sort) => void }) {
  const isActive = sort === column;
  return (
    <button
      type="button"
      className="sort-button"
      onClick={() => onSort(column)}
      aria-label={`Sort by ${label === "first" ? "first seen" : label.toLowerCase()}`}
    >
      {label}
      <span aria-hidden="true">{isActive ? (order === "asc" ? " ▲" : " ▼") : " ↕"}</span>
    </button>
  );
}

/** A column header that sorts: a real button, the column's state in aria-sort. */
function SortHeader(props: { label: string; column: Sort; sort: Sort; order: "asc" | "desc"; onSort: (c: Sort) => void; isNumeric?: boolean }) {
  const isActive = props.sort === props.column;
  return (
    <th scope="col" className={props.isNumeric ? "num" : undefined} aria-sort={isActive ? (props.order === "asc" ? "ascending" : "descending") : "none"}>
      <SortButton {...props} />
    </th>
  );
}

function GroupsTable({ groups, sort, order, onSort }: { groups: TGroupSummary[]; sort: Sort; order: "asc" | "desc"; onSort: (c: Sort) => void }) {
  const props = { sort, order, onSort };
  return (
    <div className="table-wrap">
      <table className="grid dlq-groups">
        <caption className="sr-only">Failure groups</caption>
        <thead>
          <tr>
            <th scope="col">Failure</th>
            <th scope="col">Job type · code</th>
            <SortHeader label="Count" column="count" isNumeric {...props} />
            <SortHeader label="Dead now" column="dead_now" isNumeric {...props} />
            <th scope="col">Last 24 h</th>
            <th scope="col">Top tenants</th>
            <th scope="col" aria-sort={sort === "status" ? (order === "asc" ? "ascending" : "descending") : "none"}>
              <SortButton label="Status" column="status" {...props} />
              <span> · owner</span>
            </th>
            <th scope="col" aria-sort={sort === "last_seen" || sort === "first_seen" ? (order === "asc" ? "ascending" : "descending") : "none"}>
              <SortButton label="Last seen" column="last_seen" {...props} />
              <span aria-hidden="true"> · </span>
              <SortButton label="first" column="first_seen" {...props} />
            </th>
          </tr>
        </thead>
        <tbody>
          {groups.map((g) => (
            <tr key={g.id} data-testid="dlq-group" data-group-id={g.id}>
              <th scope="row" className="wrap error-cell">
                <Link href={`/dead-letters/${g.id}`} className="group-link" aria-label={`Group ${g.id}: ${g.job_type} ${g.error_code}`}>
                  Group {g.id}
                </Link>{" "}
                <LongText text={g.sample_message} max={90} />
              </th>
              <td>
                <span className="stack">
                  <span>{g.job_type}</span>
                  <code className="small">{g.error_code}</code>
                </span>
              </td>
              <td className="num">{count(g.count)}</td>
              <td className="num">{count(g.dead_now)}</td>
              <td>
                <Sparkline values={g.sparkline} label={`Deaths of group ${g.id}`} />
              </td>
              <td className="small">{g.tenants.length ? g.tenants.map((t) => `${t.tenant_id} (${count(t.count)})`).join(", ") : "—"}</td>
              <td>
                <span className="stack">
                  <DlqStatusBadge status={g.status} isRegression={g.is_regression} />
                  {g.owner ? (
                    <span className="small" title={g.owner.email}>
                      {g.owner.name || g.owner.email}
                    </span>
                  ) : (
                    <span className="muted small">unowned</span>
                  )}
                </span>
              </td>
              <td>
                <span className="stack">
                  <span title={dateTime(g.last_seen)}>{ago(g.last_seen)}</span>
                  <span className="muted small" title={dateTime(g.first_seen)}>
                    first {ago(g.first_seen)}
                  </span>
                </span>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** Filter inputs; applied on submit (Enter in any field), cleared by Reset. */
function GroupFilters({ input, onApply, onReset }: { input: ListInput; onApply: (change: Record<string, string | null>) => void; onReset: () => void }) {
  const trpc = useTRPC();
  const queues = useQuery(trpc.queues.list.queryOptions());
  const types = useQuery(trpc.jobTypes.list.queryOptions());
  const tenants = useQuery(trpc.tenants.list.queryOptions());
  const submit = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const data = new FormData(event.currentTarget);
    const text = (name: string) => String(data.get(name) ?? "").trim() || null;
    onApply({
      queue: text("queue"),
      type: text("type"),
      tenant: text("tenant"),
      status: text("status"),
      owner: text("owner"),
      all: data.get("all") ? "1" : null,
    });
  };
  const ids = (rows: ReadonlyArray<{ id: string }> | undefined) => (rows ?? []).map((r) => r.id);
  return (
    <form className="filters" onSubmit={submit} aria-label="Filter failure groups" key={JSON.stringify(input)}>
      <Choice label="Queue" name="queue" value={input.queue_id} options={ids(queues.data)} />
      <Choice label="Job type" name="type" value={input.job_type} options={ids(types.data)} />
      <Choice label="Tenant" name="tenant" value={input.tenant_id} options={ids(tenants.data)} />
      <label>
        Status
        <select name="status" defaultValue={input.status ?? ""}>
          <option value="">any</option>
          {DLQ_STATUSES.map((s) => (
            <option key={s} value={s}>
              {statusLabel(s)}
            </option>
          ))}
        </select>
      </label>
      <label>
        Owner
        <select name="owner" defaultValue={input.owner ?? ""}>
          <option value="">anyone</option>
          <option value="me">me</option>
          <option value="none">nobody (unowned)</option>
        </select>
      </label>
      <label className="check">
        <input type="checkbox" name="all" defaultChecked={input.dead_only === false} /> include groups with no job dead now
      </label>
      <div className="filter-actions">
        <button type="submit" className="button primary">
          Apply
        </button>
        <button type="button" className="button" onClick={onReset}>
          Reset
        </button>
      </div>
    </form>
  );
}

function Choice({ label, name, value, options }: { label: string; name: string; value: string | undefined; options: readonly string[] }) {
  return (
    <label>
      {label}
      {/* Keyed by the options: mounted again once they load, so the URL's value is selected. */}
      <select name={name} defaultValue={value ?? ""} key={options.length}>
        <option value="">any</option>
        {value && !options.includes(value) ? <option value={value}>{value}</option> : null}
        {options.map((o) => (
          <option key={o} value={o}>
            {o}
          </option>
        ))}
      </select>
    </label>
  );
}
