import { useTestDatabase } from "@porter/db/testing/test-database";
import { beforeAll, describe, expect, it } from "vitest";
import { cancelJob } from "../sql/cancel-job";
import { enqueueJobs } from "../sql/enqueue-jobs";
import { controlPlane } from "../testing/control-plane-factory";
import { listJobs, selectJobIds } from "./jobs-query";

// The jobs browser's order is job_id descending (UUIDv7: creation order) across the live and the
// finished table, page after page.
const db = useTestDatabase();
const T0 = Date.UTC(2026, 10, 30, 12);

/** Job ids by their creation offset in ms from T0. */
const byOffset = new Map<number, string>();

beforeAll(async () => {
  await controlPlane(db.pool, { queues: [{ id: "jq" }] });
  // Enqueued out of time order, so row ids (enqueue order) disagree with creation order…
  for (const offset of [3, 1, 5, 2, 4]) {
    const [r] = await enqueueJobs(db.pool, [{ job_type: "jq.job", tenant_id: "tenant_A", payload: { offset }, idempotency_key: `jq-${offset}` }], {
      now: new Date(T0 + offset),
      notify: false,
    });
    byOffset.set(offset, r!.job_id);
  }
  // …and the newest first alternate between the two tables: 5 finished, 4 live, 3 finished, 2 live, 1 finished.
  for (const offset of [5, 3, 1]) await cancelJob(db.pool, { jobId: byOffset.get(offset)!, actor: "test" });
  // created_at is shown, not paged by: reversing it here leaves job_id as the only key that gives
  // the expected order (neither created_at nor the row id does).
  for (const [offset, jobId] of byOffset) {
    for (const table of ["jobs", "finished_jobs"]) {
      await db.pool.query(`UPDATE ${table} SET created_at = $2 WHERE job_id = $1`, [jobId, new Date(T0 + 10 - offset)]);
    }
  }
});

describe("listJobs", () => {
  it("pages live and finished jobs together by job_id descending, 2 per page", async () => {
    const pages: string[][] = [];
    let cursor: string | null = null;
    do {
      const page = await listJobs(db.pool, { filter: { queueId: "jq" }, cursor, limit: 2 });
      pages.push(page.jobs.map((j) => `${j.job_id} ${j.state}`));
      cursor = page.next_cursor;
    } while (cursor && pages.length < 10);

    const row = (offset: number, state: string) => `${byOffset.get(offset)} ${state}`;
    expect(pages).toEqual([[row(5, "CANCELLED"), row(4, "READY")], [row(3, "CANCELLED"), row(2, "READY")], [row(1, "CANCELLED")]]);
    // The same order is job_id order (the ids' text sorts as their bytes do).
    const ids = pages.flat().map((r) => r.split(" ")[0]!);
    expect(ids).toEqual([...ids].sort().reverse());
  });

  it("keeps the order under a filter that reads one table, and refuses a cursor that is not one", async () => {
    const first = await listJobs(db.pool, { filter: { queueId: "jq", states: ["CANCELLED"] }, limit: 1 });
    const rest = await listJobs(db.pool, { filter: { queueId: "jq", states: ["CANCELLED"] }, cursor: first.next_cursor, limit: 5 });
    expect([...first.jobs, ...rest.jobs].map((j) => j.job_id)).toEqual([5, 3, 1].map((o) => byOffset.get(o)));
    expect(rest.next_cursor).toBeNull();
    await expect(listJobs(db.pool, { filter: {}, cursor: `${first.next_cursor}x` })).rejects.toMatchObject({ code: "BAD_REQUEST" });
  });
});

describe("selectJobIds", () => {
  it("selects oldest first, by job_id across both tables", async () => {
    const { jobIds, total } = await selectJobIds(db.pool, { filter: { queueId: "jq" }, states: ["READY", "CANCELLED"], limit: 4 });
    expect({ jobIds, total }).toEqual({ jobIds: [1, 2, 3, 4].map((o) => byOffset.get(o)), total: 5 });
  });
});
