import { describe, expect, it } from "vitest";
import { OTHER_TENANT, tenantLabeller } from "./tenant-labels";

describe("tenantLabeller", () => {
  it("keeps the top N by volume and folds the rest into other", () => {
    const label = tenantLabeller(
      new Map([
        ["a", 5],
        ["b", 50],
        ["c", 20],
        ["d", 1],
      ]),
      2,
    );
    expect(["a", "b", "c", "d", "unknown"].map(label)).toEqual([OTHER_TENANT, "b", "c", OTHER_TENANT, OTHER_TENANT]);
  });

  it("breaks ties by id, and N = 0 labels everyone other", () => {
    const volume = new Map([
      ["y", 3],
      ["x", 3],
      ["z", 3],
    ]);
    expect(["x", "y", "z"].map(tenantLabeller(volume, 2))).toEqual(["x", "y", OTHER_TENANT]);
    expect(["x", "y"].map(tenantLabeller(volume, 0))).toEqual([OTHER_TENANT, OTHER_TENANT]);
  });
});
