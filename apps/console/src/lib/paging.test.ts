import { describe, expect, it } from "vitest";
import { pageOf } from "./paging";

const rows = Array.from({ length: 120 }, (_, i) => i);

describe("pageOf", () => {
  it("slices a page and says where it sits", () => {
    expect(pageOf(rows, 0)).toMatchObject({ page: 0, pages: 3, from: 1, to: 50, total: 120 });
    expect(pageOf(rows, 1).rows).toEqual(rows.slice(50, 100));
    expect(pageOf(rows, 2)).toMatchObject({ from: 101, to: 120 });
    expect(pageOf(rows, 2).rows).toHaveLength(20);
  });

  it("clamps a page past the end (the list shrank) to the last one, and a negative one to the first", () => {
    expect(pageOf(rows.slice(0, 60), 2)).toMatchObject({ page: 1, from: 51, to: 60 });
    expect(pageOf(rows, -3).page).toBe(0);
  });

  it("an empty list is one empty page", () => {
    expect(pageOf([], 4)).toEqual({ rows: [], page: 0, pages: 1, from: 0, to: 0, total: 0 });
  });

  it("honours another page size", () => {
    expect(pageOf(rows, 3, 25)).toMatchObject({ from: 76, to: 100, pages: 5 });
  });
});
