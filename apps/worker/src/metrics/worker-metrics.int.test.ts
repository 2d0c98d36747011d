// `porter-worker --metrics-port`: a real worker process serves its own registry on loopback, fed
// by the runtime's in-memory probe; `promtool check metrics` (Debian's prometheus package) accepts
// the text. The counters follow the work: claims, result batches, outcomes by job type.
import { DIAG_JOB_TYPES } from "@porter/contracts";
import { controlPlane } from "@porter/core/testing/control-plane-factory";
import { checkMetrics } from "@porter/core/testing/prometheus";
import { createPool } from "@porter/db/pool";
import { useTestDatabase } from "@porter/db/testing/test-database";
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { enqueue, waitForStates } from "../testing/fixtures";
import { killWorker, spawnWorker, type WorkerProcess } from "../testing/worker-process";

const testDb = useTestDatabase();
let db: pg.Pool;
let worker: WorkerProcess | undefined;

beforeAll(async () => {
  db = createPool(testDb.appConnectionString, { max: 4 });
  await controlPlane(db, {
    pool: "metrics-pool",
    queues: [{ id: "metrics" }],
    jobTypes: DIAG_JOB_TYPES.map((id) => ({ id, queue: "metrics" })),
    tenants: ["tenant_A"],
  });
});

afterAll(async () => {
  await killWorker(worker);
  await db.end();
});

/** The value of the first series named `name` whose labels include `labels` (NaN when none). */
const sampleOf = (text: string, name: string, labels: Record<string, string> = {}): number => {
  for (const line of text.split("\n")) {
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const has = Object.fromEntries([...(m[2] ?? "").matchAll(/(\w+)="([^"]*)"/g)].map((l) => [l[1], l[2]]));
    if (Object.entries(labels).every(([k, v]) => has[k] === v)) return Number(m[3]);
  }
  return Number.NaN;
};

describe("worker --metrics-port", () => {
  it("serves claims, batch sizes, slots, heartbeats and outcomes by job type; promtool accepts it", async () => {
    worker = spawnWorker({
      connectionString: testDb.appConnectionString,
      pool: "metrics-pool",
      args: ["--concurrency", "3", "--no-maintenance", "--metrics-port", "0"],
    });
    const listening = await worker.waitForLog((l) => l.msg === "metrics endpoint listening");
    const url = String(listening.url);
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);

    const ok = await enqueue(
      db,
      Array.from({ length: 5 }, () => ({ type: "diag.sleep", payload: { ms: 1 } })),
    );
    const dead = await enqueue(db, [{ type: "diag.fail", payload: { mode: "permanent" } }]);
    await waitForStates(db, ok, ["SUCCEEDED"]);
    await waitForStates(db, dead, ["DEAD"]);

    let text = "";
    // The outcomes are counted when buffered, the batches when written: wait for the last write.
    for (let i = 0; i < 50; i++) {
      text = await (await fetch(url)).text();
      if (
        sampleOf(text, "porter_worker_result_batch_rows_sum", { kind: "fail" }) >= 1
        && sampleOf(text, "porter_worker_result_batch_rows_sum", { kind: "ack" }) >= 5
      )
        break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const check = checkMetrics(text);
    expect(check.problems).toEqual([]);
    expect([0, 3]).toContain(check.status);

    expect(sampleOf(text, "porter_worker_claims_total")).toBeGreaterThanOrEqual(1);
    expect(sampleOf(text, "porter_worker_claimed_rows_sum")).toBe(6);
    // Every claim statement's round trip is observed once, none of them 0 s or over 5 s.
    expect(sampleOf(text, "porter_worker_claim_seconds_count")).toBe(sampleOf(text, "porter_worker_claims_total"));
    expect(sampleOf(text, "porter_worker_claim_seconds_sum")).toBeGreaterThan(0);
    expect(sampleOf(text, "porter_worker_claim_seconds_bucket", { le: "5" })).toBe(sampleOf(text, "porter_worker_claims_total"));
    expect(sampleOf(text, "porter_worker_result_batch_rows_sum", { kind: "ack" })).toBe(5);
    expect(sampleOf(text, "porter_worker_result_batch_rows_sum", { kind: "fail" })).toBe(1);
    expect(sampleOf(text, "porter_worker_attempts_total", { job_type: "diag.sleep", outcome: "succeeded" })).toBe(5);
    expect(sampleOf(text, "porter_worker_attempts_total", { job_type: "diag.fail", outcome: "dead" })).toBe(1);
    expect(sampleOf(text, "porter_worker_slots")).toBe(3);
    expect(sampleOf(text, "porter_worker_slots_busy")).toBe(0);
    expect(sampleOf(text, "porter_worker_prefetch_buffered")).toBe(0);
    expect(text).toMatch(/^porter_worker_heartbeats_total\{[^}]*\} \d+$/m);
    expect(text).toMatch(/^porter_worker_nodejs_eventloop_lag_seconds\{[^}]*pool="metrics-pool"[^}]*\} \d/m);
    // The worker id of the labels is the one the worker registered.
    const id = /worker_id="([0-9a-f-]{36})"/.exec(text)![1];
    const { rows } = await db.query("SELECT 1 FROM workers WHERE id = $1", [id]);
    expect(rows).toHaveLength(1);
    // Loopback only by default; anything but GET /metrics is 404.
    expect((await fetch(url.replace(/\/metrics$/, "/other"))).status).toBe(404);
  });
});
