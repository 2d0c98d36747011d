// Client-side pages for the lists a procedure returns whole (pools, queues, users, …): the console
// never renders an unbounded list. Cursor-paginated procedures (jobs, audit) page on the server.

/** Rows per page of a list, client-side or per cursor page. */
export const PAGE_SIZE = 50;

/** The rows of page `page` (0-based, clamped to the last page) and where they sit in the list. */
export const pageOf = <Row>(rows: readonly Row[], page: number, size = PAGE_SIZE) => {
  const pages = Math.max(1, Math.ceil(rows.length / size));
  const current = Math.min(Math.max(0, Math.floor(page)), pages - 1);
  const from = current * size;
  return {
    rows: rows.slice(from, from + size),
    page: current,
    pages,
    from: rows.length ? from + 1 : 0,
    to: Math.min(rows.length, from + size),
    total: rows.length,
  };
};
