import { advanceRedrives } from "@porter/core";
import { controlPlane } from "@porter/core/testing/control-plane-factory";
import { killJobs, redriveTableCounts } from "@porter/core/testing/dead-jobs";
import { useTestDatabase } from "@porter/db/testing/test-database";
import { TRPCError } from "@trpc/server";
import { beforeAll, describe, expect, it } from "vitest";
import { consoleCaller, sessionOf } from "./testing/console";

// dlq.redrives.*: the dry run, a durable redrive's life (create, progress, list, abort) through
// the console's procedures as the runtime role, and bad input refused with a 4xx, changing nothing.
const db = useTestDatabase();
const viewer = () => consoleCaller(db.appPool, sessionOf("viewer"));
const operator = () => consoleCaller(db.appPool, sessionOf("operator"));

let eligible: string[];
let permanent: string[];

beforeAll(async () => {
  await controlPlane(db.pool, { pool: "dr-pool", queues: [{ id: "dr-q", lease_seconds: 30, max_runtime_s: 60 }], tenants: ["dr_t"] });
  eligible = await killJobs(db.pool, 12, { jobType: "dr-q.job", tenantId: "dr_t", code: "UPSTREAM_500" }, "dr-pool");
  permanent = await killJobs(db.pool, 2, { jobType: "dr-q.job", tenantId: "dr_t", code: "INVALID_PAYLOAD", errorClass: "permanent" }, "dr-pool");
});

const codeOf = async (p: Promise<unknown>): Promise<string> =>
  p.then(
    () => "OK",
    (e) => (e instanceof TRPCError ? e.code : `THREW ${String(e)}`),
  );

describe("dlq.redrives", () => {
  it("preview: per-job verdicts and counts, and nothing changes", async () => {
    const before = await redriveTableCounts(db.pool);
    const preview = await operator().dlq.redrives.preview({ selection: { filter: { queue_id: "dr-q" } } });
    expect(preview).toMatchObject({ eligible: 12, skipped: { expired: 0, partial: 0, permanent: 2, over_quota: 0, already: 0 } });
    expect(preview.job_ids).toEqual(eligible);
    expect(preview.jobs.filter((j) => !j.eligible)).toEqual(permanent.map((job_id) => ({ job_id, eligible: false, reason: "permanent" })));
    const forced = await operator().dlq.redrives.preview({ selection: { filter: { queue_id: "dr-q" } }, force: true });
    expect(forced.eligible).toBe(14);
    expect(await redriveTableCounts(db.pool)).toEqual(before);
  });

  it("create → get (progress, ETA) → list → abort; viewers read", async () => {
    const created = await operator().dlq.redrives.create({ selection: { job_ids: eligible.slice(0, 10) }, rate_per_s: 2, reason: "fixed" });
    expect(created).toMatchObject({ status: "running", total: 10, redriven: 0, progress: 0, eta_s: 5, rate_per_s: 2, actor: "user:operator@example.com" });
    const t0 = Date.parse(created.created_at);
    await advanceRedrives(db.appPool, { now: new Date(t0 + 10) }); // the first batch: 2
    await advanceRedrives(db.appPool, { now: new Date(t0 + 1010) }); // one second later: 2 more
    const mid = await viewer().dlq.redrives.get({ id: created.redrive_id });
    expect(mid).toMatchObject({ status: "running", redriven: 4, progress: 0.4, eta_s: 3 });
    const list = await viewer().dlq.redrives.list({ status: "running" });
    expect(list.redrives.map((r) => r.redrive_id)).toEqual([created.redrive_id]);
    expect(await codeOf(viewer().dlq.redrives.abort({ id: created.redrive_id }))).toBe("FORBIDDEN");
    const aborted = await operator().dlq.redrives.abort({ id: created.redrive_id, reason: "enough" });
    expect(aborted).toMatchObject({ status: "aborted", aborted_by: "user:operator@example.com", redriven: 4, eta_s: null });
    expect(await codeOf(operator().dlq.redrives.abort({ id: created.redrive_id }))).toBe("CONFLICT");
    expect((await viewer().dlq.redrives.list({ status: "aborted" })).redrives).toHaveLength(1);
  });

  it("refuses bad input with a 4xx and stores nothing", async () => {
    const before = await redriveTableCounts(db.pool);
    const cases: Array<[string, () => Promise<unknown>]> = [
      ["BAD_REQUEST", () => operator().dlq.redrives.create({ selection: { job_ids: [] }, rate_per_s: 5 })],
      ["BAD_REQUEST", () => operator().dlq.redrives.create({ selection: { job_ids: ["not-a-uuid"] }, rate_per_s: 5 })],
      ["BAD_REQUEST", () => operator().dlq.redrives.create({ selection: { filter: { queue_id: "dr-q" } }, rate_per_s: 0 })],
      ["BAD_REQUEST", () => operator().dlq.redrives.create({ selection: { filter: { queue_id: "dr-q" } }, rate_per_s: 20_000 })],
      ["BAD_REQUEST", () => operator().dlq.redrives.create({ selection: { filter: {} } })],
      ["BAD_REQUEST", () => operator().dlq.redrives.create({ selection: { filter: { queue_id: "no-such-queue" } } })],
      ["BAD_REQUEST", () => operator().dlq.redrives.preview({ selection: { filter: { from: "2026-12-02T00:00:00Z", to: "2026-12-01T00:00:00Z" } } })],
      ["BAD_REQUEST", () => operator().dlq.redrives.preview({ selection: { group_id: "0" } })],
      ["NOT_FOUND", () => operator().dlq.redrives.preview({ selection: { group_id: "987654" } })],
      ["BAD_REQUEST", () => operator().dlq.redrives.preview({ selection: { group_id: "1", job_ids: [eligible[0]!] } as never })],
      ["NOT_FOUND", () => viewer().dlq.redrives.get({ id: "00000000-0000-4000-8000-000000000000" })],
      ["BAD_REQUEST", () => viewer().dlq.redrives.get({ id: "x" })],
      ["BAD_REQUEST", () => viewer().dlq.redrives.list({ cursor: "-1" })],
      ["NOT_FOUND", () => operator().dlq.redrives.abort({ id: "00000000-0000-4000-8000-000000000000" })],
      ["FORBIDDEN", () => viewer().dlq.redrives.create({ selection: { job_ids: [eligible[11]!] } })],
    ];
    for (const [code, call] of cases) expect(await codeOf(call())).toBe(code);
    expect(await redriveTableCounts(db.pool)).toEqual(before);
  });
});

describe("jobs.redrive (the jobs browser's bulk action) goes through a durable redrive", () => {
  it("dry run = the plan; the confirm creates a redrive, runs its first batch at once, and says which", async () => {
    const selection = { job_ids: [eligible[10]!, eligible[11]!, permanent[0]!] };
    const dry = await operator().jobs.redrive({ selection, dry_run: true });
    expect(dry).toMatchObject({ dry_run: true, eligible: 2, applied: 0, skipped: { permanent: 1 } });
    const done = await operator().jobs.redrive({ selection, dry_run: false, reason: "bulk" });
    expect(done).toMatchObject({ dry_run: false, applied: 2, skipped: { permanent: 1 } });
    const redrive = await viewer().dlq.redrives.get({ id: done.redrive_id! });
    expect(redrive).toMatchObject({ status: "completed", total: 3, redriven: 2, skipped: { permanent: 1 } });
  });
});
