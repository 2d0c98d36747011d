// The Dead letters page's URL ↔ `dlq.groups.list` input: the URL is the view (shareable, bookmarkable).
import { DLQ_STATUSES, GROUP_SORTS, type TDlqStatus } from "@porter/api/schemas/dlq";

/** Failure groups per page. */
export const GROUPS_PER_PAGE = 25;

export type GroupSort = (typeof GROUP_SORTS)[number];

/** What the page asks `dlq.groups.list` (only what the URL sets; the procedure defaults the rest). */
export type GroupListParams = {
  queue_id?: string;
  job_type?: string;
  tenant_id?: string;
  error_code?: string;
  status?: TDlqStatus;
  owner?: string;
  dead_only?: boolean;
  sort?: GroupSort;
  order?: "asc" | "desc";
  cursor?: string;
  limit: number;
};

/** URL parameters that filter (the page and the sort do not). */
export const GROUP_FILTER_PARAMS = ["queue", "type", "tenant", "code", "status", "owner", "all"] as const;

/**
 * The list input and the page (0-based) a URL asks for. Unknown statuses and sorts, and pages that
 * are not numbers, are dropped rather than sent (the procedure would refuse them with a 400).
 */
export const groupListFromParams = (params: URLSearchParams): { input: GroupListParams; page: number } => {
  const text = (k: string) => params.get(k)?.trim() || undefined;
  const input: GroupListParams = { limit: GROUPS_PER_PAGE };
  const fields = { queue: "queue_id", type: "job_type", tenant: "tenant_id", code: "error_code", owner: "owner" } as const;
  for (const [param, field] of Object.entries(fields)) {
    const value = text(param);
    if (value) input[field] = value.slice(0, 200);
  }
  const status = text("status");
  if (status && (DLQ_STATUSES as readonly string[]).includes(status)) input.status = status as TDlqStatus;
  if (params.get("all") === "1") input.dead_only = false;
  const sort = text("sort");
  if (sort && (GROUP_SORTS as readonly string[]).includes(sort)) input.sort = sort as GroupSort;
  if (params.get("order") === "asc") input.order = "asc";
  const asked = Number(params.get("page") ?? "0");
  const page = Number.isInteger(asked) && asked > 0 ? Math.min(asked, 1_000_000) : 0;
  if (page) input.cursor = String(page * GROUPS_PER_PAGE);
  return { input, page };
};

/** Clicking a column header: sort by it, descending first; clicking the sorted column again flips it. */
export const nextSort = (current: { sort: GroupSort; order: "asc" | "desc" }, column: GroupSort): { sort: GroupSort; order: "asc" | "desc" } => ({
  sort: column,
  order: column === current.sort && current.order === "desc" ? "asc" : "desc",
});
