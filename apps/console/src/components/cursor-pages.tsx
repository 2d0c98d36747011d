"use client";
import { useState } from "react";

/**
 * Previous / Next over a procedure paged by `cursor` → `next_cursor` (the dlq lists): the cursors
 * of the pages visited so far, so Previous goes back exactly. (`useInfiniteQuery` is not used for
 * these: it adds a `direction` field their strict inputs refuse.)
 */
export const useCursorPages = () => {
  const [cursors, setCursors] = useState<string[]>([]);
  return {
    /** The current page's cursor (undefined on the first page). */
    cursor: cursors.at(-1),
    /** 0-based. */
    page: cursors.length,
    next: (cursor: string) => setCursors((c) => [...c, cursor]),
    previous: () => setCursors((c) => c.slice(0, -1)),
    reset: () => setCursors([]),
  };
};

/** The pager under a cursor-paged table; nothing when there is one page only. */
export function CursorPager({
  pages,
  nextCursor,
  shown,
  label,
}: {
  pages: ReturnType<typeof useCursorPages>;
  nextCursor: string | null | undefined;
  /** Rows on this page. */
  shown: number;
  label: string;
}) {
  if (pages.page === 0 && !nextCursor) return null;
  return (
    <nav className="pager" aria-label={label}>
      <span className="muted">
        Page {pages.page + 1} · {shown} shown
      </span>
      <span className="row-actions">
        <button type="button" className="button" onClick={pages.previous} disabled={pages.page === 0}>
          Previous
        </button>
        <button type="button" className="button" onClick={() => nextCursor && pages.next(nextCursor)} disabled={!nextCursor}>
          Next
        </button>
      </span>
    </nav>
  );
}
