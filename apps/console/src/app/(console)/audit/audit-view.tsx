"use client";
import { useInfiniteQuery } from "@tanstack/react-query";
import Link from "next/link";
import { type FormEvent, useState } from "react";
import { type Column, cursorList, DataTable } from "../../../components/data-table";
import { Page } from "../../../components/page";
import { Empty } from "../../../components/states";
import { ago, dateTime } from "../../../lib/format";
import { PAGE_SIZE } from "../../../lib/paging";
import { type RouterInputs, type RouterOutputs, useTRPC } from "../../../lib/trpc";

type Filter = NonNullable<RouterInputs["audit"]["list"]["filter"]>;
type Entry = RouterOutputs["audit"]["list"]["entries"][number];

const OBJECT_TYPES = ["job", "queue", "pool", "job_type", "tenant", "resource_key", "api_key", "user"];

const objectHref = (type: string, id: string): string | null => {
  if (type === "job") return `/jobs/${id}`;
  if (type === "queue") return `/jobs?queue=${encodeURIComponent(id)}`;
  if (type === "tenant") return `/jobs?tenant=${encodeURIComponent(id)}`;
  return null;
};

const show = (v: unknown) => (v === null || v === undefined ? "—" : typeof v === "string" ? v : JSON.stringify(v));

/** `field: before → after` for each field either side names. */
function Change({ before, after }: { before: unknown; after: unknown }) {
  const b = (before && typeof before === "object" ? before : {}) as Record<string, unknown>;
  const a = (after && typeof after === "object" ? after : {}) as Record<string, unknown>;
  const keys = [...new Set([...Object.keys(b), ...Object.keys(a)])];
  if (keys.length === 0) return <span className="muted">—</span>;
  return (
    <ul className="changes">
      {keys.map((k) => (
        <li key={k}>
          <span className="muted">{k}:</span> {k in b ? <del>{show(b[k])}</del> : null}
          {k in b && k in a ? " → " : null}
          {k in a ? <ins>{show(a[k])}</ins> : null}
        </li>
      ))}
    </ul>
  );
}

const COLUMNS: ReadonlyArray<Column<Entry>> = [
  {
    header: "When",
    cell: (e) => (
      <span title={dateTime(e.at)}>
        {dateTime(e.at)} <span className="muted small">({ago(e.at)})</span>
      </span>
    ),
  },
  { header: "Actor", cell: (e) => e.actor },
  { header: "Action", cell: (e) => <code>{e.action}</code> },
  {
    header: "Object",
    cell: (e) => {
      const href = objectHref(e.object_type, e.object_id);
      return (
        <>
          {e.object_type}:{" "}
          {href ? (
            <Link href={href} className="mono">
              {e.object_id}
            </Link>
          ) : (
            <span className="mono">{e.object_id}</span>
          )}
        </>
      );
    },
  },
  { header: "Change (before → after)", isWrapping: true, cell: (e) => <Change before={e.before} after={e.after} /> },
  { header: "Reason", isWrapping: true, cell: (e) => e.reason ?? "—" },
];

export function AuditView() {
  const trpc = useTRPC();
  const [filter, setFilter] = useState<Filter>({});
  const entries = cursorList(
    useInfiniteQuery(trpc.audit.list.infiniteQueryOptions({ filter, limit: PAGE_SIZE }, { getNextPageParam: (last) => last.next_cursor ?? undefined })),
    (page) => page.entries,
  );

  const submit = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const data = new FormData(event.currentTarget);
    const text = (name: string) => String(data.get(name) ?? "").trim();
    const next: Filter = {};
    for (const k of ["actor", "action", "object_type", "object_id"] as const) if (text(k)) next[k] = text(k);
    if (text("from")) next.from = new Date(text("from")).toISOString();
    if (text("to")) next.to = new Date(text("to")).toISOString();
    setFilter(next);
  };

  return (
    <Page
      title="Audit log"
      description="Every change made from the console, the CLI or the API: who, what, to which object, when, before → after. Append-only: the database refuses edits and deletes."
    >
      <form className="filters" onSubmit={submit} aria-label="Filter the audit log">
        <label>
          Actor
          <input name="actor" placeholder="user:alice@example.com" autoComplete="off" />
        </label>
        <label>
          Action
          <input name="action" placeholder="queue. or job.redrive" autoComplete="off" />
        </label>
        <label>
          Object type
          <select name="object_type" defaultValue="">
            <option value="">any</option>
            {OBJECT_TYPES.map((t) => (
              <option key={t} value={t}>
                {t}
              </option>
            ))}
          </select>
        </label>
        <label>
          Object id
          <input name="object_id" autoComplete="off" />
        </label>
        <label>
          From
          <input type="datetime-local" name="from" />
        </label>
        <label>
          Before
          <input type="datetime-local" name="to" />
        </label>
        <div className="filter-actions">
          <button type="submit" className="button primary">
            Apply
          </button>
          <button type="reset" className="button" onClick={() => setFilter({})}>
            Reset
          </button>
        </div>
      </form>
      <DataTable
        query={entries}
        columns={COLUMNS}
        rowKey={(e) => String(e.id)}
        rowProps={(e) => ({ "data-id": e.id })}
        className="audit"
        caption="Audit log"
        loadingLabel="Loading the audit log…"
        empty={<Empty title={Object.keys(filter).length ? "Nothing matches this filter" : "No changes recorded yet"} />}
      />
    </Page>
  );
}
