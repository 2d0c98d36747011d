import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { activeTenantsSql, weightShare } from "./fair-share";

const CLAIM_SQL = new URL("../sql/routines/claim.sql", import.meta.url);

/** The probes of a (queue, tenant)'s claimable work (`LATERAL (… LIMIT 1) w`) in an SQL text, whitespace collapsed. */
const claimableWork = (sql: string): string[] =>
  [...sql.matchAll(/LATERAL \(SELECT 1 FROM jobs j\s+WHERE j\.queue_id = q\.id AND j\.tenant_id = fc\.tenant_id[\s\S]*?LIMIT 1\) w/g)].map((m) =>
    m[0].replace(/\s+/g, " "),
  );

describe("activeTenantsSql", () => {
  // The claim routine is PL/pgSQL and cannot import the TypeScript home of "active": this pins
  // that both apply the same test of claimable work, so the console's weight shares explain the
  // claim's real ones. A change to either side fails here until the other follows.
  it("tests claimable work exactly as each of the claim routine's `active` CTEs does", () => {
    const claim = claimableWork(readFileSync(CLAIM_SQL, "utf8").replaceAll("qs.id", "q.id"));
    expect(claim.length).toBeGreaterThanOrEqual(2);
    const ours = claimableWork(activeTenantsSql("v_now"));
    expect(ours).toHaveLength(1);
    for (const c of claim) expect(c).toBe(ours[0]);
  });
});

describe("weightShare", () => {
  it("is the tenant's weight over the active tenants' total; null when it is not active", () => {
    const active = [
      { tenantId: "a", weight: 1 },
      { tenantId: "b", weight: 2 },
      { tenantId: "b", weight: 2 },
    ];
    expect(weightShare("a", active)).toBeCloseTo(1 / 3, 12);
    expect(weightShare("b", active)).toBeCloseTo(2 / 3, 12);
    expect(weightShare("c", active)).toBeNull();
  });
});
