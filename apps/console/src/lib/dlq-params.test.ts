import { ZGroupListInput } from "@porter/api/schemas/dlq";
import { describe, expect, it } from "vitest";
import { GROUPS_PER_PAGE, groupListFromParams, nextSort } from "./dlq-params";

const from = (qs: string) => groupListFromParams(new URLSearchParams(qs));

describe("groupListFromParams", () => {
  it("maps every filter parameter to its field, and the page to an offset cursor", () => {
    const { input, page } = from("queue=diag&type=diag.fail&tenant=tenant_A&code=DIAG_PERMANENT&status=fix_pending&owner=me&all=1&sort=count&order=asc&page=3");
    expect(page).toBe(3);
    expect(input).toEqual({
      queue_id: "diag",
      job_type: "diag.fail",
      tenant_id: "tenant_A",
      error_code: "DIAG_PERMANENT",
      status: "fix_pending",
      owner: "me",
      dead_only: false,
      sort: "count",
      order: "asc",
      cursor: String(3 * GROUPS_PER_PAGE),
      limit: GROUPS_PER_PAGE,
    });
    expect(ZGroupListInput.safeParse(input).success).toBe(true);
  });

  it("an empty URL is the first page with the procedure's defaults", () => {
    expect(from("")).toEqual({ input: { limit: GROUPS_PER_PAGE }, page: 0 });
  });

  it("drops what the procedure would refuse: unknown status or sort, a page that is not a positive integer, blank values", () => {
    for (const qs of ["status=closed", "sort=owner", "page=-2", "page=1.5", "page=abc", "queue=%20%20", "order=sideways"]) {
      const { input, page } = from(qs);
      expect(page, qs).toBe(0);
      expect(input, qs).toEqual({ limit: GROUPS_PER_PAGE });
      expect(ZGroupListInput.safeParse(input).success, qs).toBe(true);
    }
  });

  it("keeps an over-long value within the contract's 200 characters", () => {
    const { input } = from(`type=${"x".repeat(500)}`);
    expect(input.job_type).toHaveLength(200);
    expect(ZGroupListInput.safeParse(input).success).toBe(true);
  });
});

describe("nextSort", () => {
  it("sorts a new column descending, and flips the sorted one", () => {
    expect(nextSort({ sort: "last_seen", order: "desc" }, "count")).toEqual({ sort: "count", order: "desc" });
    expect(nextSort({ sort: "count", order: "desc" }, "count")).toEqual({ sort: "count", order: "asc" });
    expect(nextSort({ sort: "count", order: "asc" }, "count")).toEqual({ sort: "count", order: "desc" });
  });
});
