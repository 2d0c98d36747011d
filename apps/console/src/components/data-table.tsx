"use client";
import { type KeyboardEvent, type ReactNode, useState } from "react";
import { count } from "../lib/format";
import { PAGE_SIZE, pageOf } from "../lib/paging";
import { ErrorState, Loading } from "./states";

/** One column: its header, what a row shows in it, and how it is laid out. */
export type Column<Row> = {
  /** The header's text (also the column's key). */
  header: string;
  cell: (row: Row) => ReactNode;
  isNumeric?: boolean;
  isWrapping?: boolean;
  /** Extra classes of the column's cells, e.g. "mono". */
  className?: string;
  /** Extra classes of the column's header. */
  headerClassName?: string;
};

/**
 * A list as the table reads it: `useQuery(…)` of a procedure that returns every row (the table pages
 * it), or `cursorList(useInfiniteQuery(…))` of a cursor-paginated one (`more` loads the next page).
 */
export type ListQuery<Row> = {
  data: readonly Row[] | undefined;
  isPending: boolean;
  error: unknown;
  refetch: () => unknown;
  more?: { hasMore: boolean; isLoading: boolean; load: () => unknown };
};

/** The rows of a cursor-paginated infinite query, every page loaded so far, as a `ListQuery`. */
export const cursorList = <Page, Row>(
  query: {
    data: { pages: Page[] } | undefined;
    isPending: boolean;
    error: unknown;
    refetch: () => unknown;
    hasNextPage: boolean;
    isFetchingNextPage: boolean;
    fetchNextPage: () => unknown;
  },
  rowsOf: (page: Page) => readonly Row[],
): ListQuery<Row> => ({
  data: query.data?.pages.flatMap(rowsOf),
  isPending: query.isPending,
  error: query.error,
  refetch: query.refetch,
  more: { hasMore: query.hasNextPage, isLoading: query.isFetchingNextPage, load: query.fetchNextPage },
});

/** Rows already at hand (a job's attempts) as a `ListQuery`. */
export const rowsList = <Row,>(rows: readonly Row[]): ListQuery<Row> => ({ data: rows, isPending: false, error: null, refetch: () => undefined });

/** Checkboxes in front of each row, and one for every row shown. */
export type Selection<Row> = {
  selected: ReadonlySet<string>;
  onChange: (next: Set<string>) => void;
  /** The checkbox's accessible name, e.g. "Select job …". */
  label: (row: Row) => string;
  allLabel: string;
};

const FOCUSABLE = "a[href], button:not([disabled]), input:not([disabled]), select:not([disabled]), textarea:not([disabled])";

/**
 * ↑/↓ on a control in a row moves focus to the same control of the row above or below (the
 * next row that has one), so row actions and links are reachable without tabbing through each
 * row. Inputs that use the arrows themselves (selects, text fields) keep them.
 */
const moveBetweenRows = (event: KeyboardEvent<HTMLTableSectionElement>) => {
  if (event.key !== "ArrowDown" && event.key !== "ArrowUp") return;
  const target = event.target;
  if (!(target instanceof HTMLElement)) return;
  if (target instanceof HTMLSelectElement || target instanceof HTMLTextAreaElement || (target instanceof HTMLInputElement && target.type !== "checkbox"))
    return;
  const cell = target.closest("td, th");
  let row: Element | null | undefined = cell?.parentElement;
  if (!cell || !row) return;
  const column = [...row.children].indexOf(cell);
  const nth = [...cell.querySelectorAll(FOCUSABLE)].indexOf(target);
  for (;;) {
    row = event.key === "ArrowDown" ? row.nextElementSibling : row.previousElementSibling;
    if (!row) return;
    const controls = [...(row.children[column]?.querySelectorAll<HTMLElement>(FOCUSABLE) ?? [])];
    const next = controls[nth] ?? controls[0];
    if (next) {
      event.preventDefault();
      next.focus();
      return;
    }
  }
};

/** Previous / Next under a list paged here (`pageOf`); nothing when it fits on one page. */
export function Pager({ shown, onPage, label }: { shown: Omit<ReturnType<typeof pageOf>, "rows">; onPage: (page: number) => void; label: string }) {
  if (shown.pages <= 1) return null;
  return (
    <nav className="pager" aria-label={label}>
      <span className="muted">
        Showing {count(shown.from)}–{count(shown.to)} of {count(shown.total)}
      </span>
      <span className="row-actions">
        <button type="button" className="button" onClick={() => onPage(shown.page - 1)} disabled={shown.page === 0}>
          Previous
        </button>
        <button type="button" className="button" onClick={() => onPage(shown.page + 1)} disabled={shown.page === shown.pages - 1}>
          Next
        </button>
      </span>
    </nav>
  );
}

/**
 * The console's table of a list: loading, error (with Try again) and empty states, pages (Previous /
 * Next for a whole list, Load more for cursor pages), an optional selection column and row actions.
 * The first column is the row's header; ↑/↓ move between rows (see `moveBetweenRows`).
 */
export function DataTable<Row>({
  query,
  columns,
  rowKey,
  empty,
  loadingLabel,
  caption,
  className,
  rowProps,
  rowActions,
  rowLabel,
  selection,
  total,
  pageSize = PAGE_SIZE,
}: {
  query: ListQuery<Row>;
  columns: ReadonlyArray<Column<Row>>;
  rowKey: (row: Row) => string;
  /** What an empty list shows (an `<Empty>` with what to do about it). */
  empty: ReactNode;
  loadingLabel?: string;
  /** The table's name for screen readers. */
  caption?: string;
  /** Classes after `grid`, e.g. "jobs". */
  className?: string;
  /** Attributes of a row's <tr>: a class, `data-*`. */
  rowProps?: (row: Row) => { className?: string | undefined } & Record<`data-${string}`, string | number>;
  /** The row's actions (buttons), in a last column. */
  rowActions?: (row: Row) => ReactNode;
  /** Names the group of a row's actions ("Actions for queue diag"). */
  rowLabel?: (row: Row) => string;
  selection?: Selection<Row>;
  /** Rows matching on the server, for "Showing 50 of 1,234" under cursor pages. */
  total?: number;
  pageSize?: number;
}) {
  const [page, setPage] = useState(0);
  if (query.isPending) return <Loading {...(loadingLabel ? { label: loadingLabel } : {})} />;
  if (query.error || query.data === undefined) return <ErrorState error={query.error} onRetry={() => void query.refetch()} />;
  if (query.data.length === 0) return <>{empty}</>;

  const more = query.more;
  const shown = more ? { rows: query.data, page: 0, pages: 1, from: 1, to: query.data.length, total: query.data.length } : pageOf(query.data, page, pageSize);
  const isAllSelected = selection !== undefined && shown.rows.every((r) => selection.selected.has(rowKey(r)));
  const toggle = (key: string, isOn: boolean) => {
    if (!selection) return;
    const next = new Set(selection.selected);
    if (isOn) next.add(key);
    else next.delete(key);
    selection.onChange(next);
  };
  const cellClass = (c: Column<Row>) => [c.isNumeric ? "num" : "", c.isWrapping ? "wrap" : "", c.className ?? ""].join(" ").trim() || undefined;

  return (
    <>
      <div className="table-wrap">
        <table className={`grid${className ? ` ${className}` : ""}`}>
          {caption ? <caption className="sr-only">{caption}</caption> : null}
          <thead>
            <tr>
              {selection ? (
                <th scope="col" className="check-col">
                  <input
                    type="checkbox"
                    aria-label={selection.allLabel}
                    checked={selection.selected.size > 0 && isAllSelected}
                    onChange={(e) => selection.onChange(e.target.checked ? new Set([...selection.selected, ...shown.rows.map(rowKey)]) : new Set())}
                  />
                </th>
              ) : null}
              {columns.map((c) => (
                <th key={c.header} scope="col" className={[c.isNumeric ? "num" : "", c.headerClassName ?? ""].join(" ").trim() || undefined}>
                  {c.header}
                </th>
              ))}
              {rowActions ? <th scope="col">Actions</th> : null}
            </tr>
          </thead>
          <tbody onKeyDown={moveBetweenRows}>
            {shown.rows.map((row) => {
              const key = rowKey(row);
              const isSelected = selection?.selected.has(key) === true;
              const extra = rowProps?.(row);
              return (
                <tr key={key} {...extra} className={[extra?.className ?? "", isSelected ? "selected" : ""].join(" ").trim() || undefined}>
                  {selection ? (
                    <td className="check-col">
                      <input type="checkbox" aria-label={selection.label(row)} checked={isSelected} onChange={(e) => toggle(key, e.target.checked)} />
                    </td>
                  ) : null}
                  {columns.map((c, i) =>
                    i === 0 ? (
                      <th key={c.header} scope="row" className={cellClass(c)}>
                        {c.cell(row)}
                      </th>
                    ) : (
                      <td key={c.header} className={cellClass(c)}>
                        {c.cell(row)}
                      </td>
                    ),
                  )}
                  {rowActions ? (
                    <td>
                      <fieldset className="row-actions in-table" aria-label={rowLabel ? `Actions for ${rowLabel(row)}` : "Actions"}>
                        {rowActions(row)}
                      </fieldset>
                    </td>
                  ) : null}
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
      {more ? (
        <div className="pager">
          <span className="muted">
            Showing {count(shown.to)}
            {total !== undefined ? ` of ${count(total)}` : ""}
          </span>
          {more.hasMore ? (
            <button type="button" className="button" onClick={() => void more.load()} disabled={more.isLoading}>
              {more.isLoading ? "Loading…" : "Load more"}
            </button>
          ) : null}
        </div>
      ) : (
        <Pager shown={shown} onPage={setPage} label={caption ? `Pages of ${caption}` : "Pages"} />
      )}
    </>
  );
}
