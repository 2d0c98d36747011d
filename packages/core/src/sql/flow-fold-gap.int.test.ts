// The hour fold across idle gaps: hours after a gap longer than one pass (48 hours) are folded, and
// an hour whose minutes were pruned (14 days) keeps its hour rows.
import { useTestDatabase } from "@porter/db/testing/test-database";
import { describe, expect, it } from "vitest";
import { FLOW_MINUTE_RETENTION_MS, foldFlowHours, pruneFlow } from "./flow-fold";

const db = useTestDatabase();
const h0 = new Date("2026-11-01T08:00:00Z");
const hour = (h: number, m = 0) => new Date(h0.getTime() + h * 3_600_000 + m * 60_000);
const minuteRow = (at: Date, n: number) =>
  db.pool.query(`INSERT INTO flow_rollups (grain, at, queue_id, job_type, tenant_id, shard, arrivals) VALUES (1, $1, 'q1', 'q1.job', 'tenant_A', 0, $2)`, [
    at,
    n,
  ]);
const hours = async () =>
  (await db.pool.query<{ at: Date; n: string }>("SELECT at, arrivals::text AS n FROM flow_rollups WHERE grain = 60 ORDER BY at")).rows.map((r) => [
    (r.at.getTime() - h0.getTime()) / 3_600_000,
    Number(r.n),
  ]);

describe("the hour fold across idle gaps", () => {
  it("folds the hours after a gap of 3 days, and keeps an hour whose minutes were pruned", async () => {
    await minuteRow(hour(0, 10), 3);
    await foldFlowHours(db.pool, { now: hour(1, 10) });
    expect(await hours()).toEqual([[0, 3]]);
    // Idle for 3 days, then work again.
    await minuteRow(hour(72, 5), 4);
    for (let pass = 0; pass < 5; pass++) await foldFlowHours(db.pool, { now: hour(73, 10 + pass) });
    expect(await hours()).toEqual([
      [0, 3],
      [72, 4],
    ]);
    // Idle for 20 days: hour 72's minutes are pruned; passes must not rewrite its hour row from nothing.
    const late = new Date(hour(73).getTime() + FLOW_MINUTE_RETENTION_MS + 6 * 86_400_000);
    await foldFlowHours(db.pool, { now: late });
    await pruneFlow(db.pool, { now: late });
    for (let pass = 0; pass < 3; pass++) await foldFlowHours(db.pool, { now: new Date(late.getTime() + pass * 60_000) });
    expect(await hours()).toEqual([
      [0, 3],
      [72, 4],
    ]);
  });
});
