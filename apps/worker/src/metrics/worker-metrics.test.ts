import { describe, expect, it } from "vitest";
import { parseEnv } from "../env";
import { failureOutcome } from "../runtime/worker-probe";
import { WorkerMetrics } from "./worker-metrics";

/** The value of the first series named `name` whose labels include `labels` (label order varies; NaN when none). */
const sampleOf = (text: string, name: string, labels: Record<string, string> = {}): number => {
  for (const line of text.split("\n")) {
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const has = Object.fromEntries([...(m[2] ?? "").matchAll(/(\w+)="([^"]*)"/g)].map((l) => [l[1], l[2]]));
    if (Object.entries(labels).every(([k, v]) => has[k] === v)) return Number(m[3]);
  }
  return Number.NaN;
};

describe("WorkerMetrics", () => {
  it("turns probe calls and the worker's state into series with pool and worker_id labels", async () => {
    const metrics = new WorkerMetrics({ pool: "p", workerId: "w-1" });
    const { probe } = metrics;
    probe.onClaim(0, 0.0015);
    probe.onClaim(7, 0.03);
    probe.onWrite("ack", 5);
    probe.onWrite("fail", 2);
    probe.onHeartbeat(3);
    for (let i = 0; i < 4; i++) probe.onOutcome("a.job", "succeeded");
    probe.onOutcome("a.job", failureOutcome("RETRY_WAIT"));
    probe.onOutcome("b.job", failureOutcome("DEAD"));
    let text = (await metrics.render()).body;
    // Before attach (the worker still starting) the gauges read 0.
    expect(sampleOf(text, "porter_worker_slots", { pool: "p", worker_id: "w-1" })).toBe(0);
    metrics.attach({ concurrency: 8, running: 3, buffered: 12, prefetchLimit: 40 });
    text = (await metrics.render()).body;
    expect(sampleOf(text, "porter_worker_claims_total", { pool: "p", worker_id: "w-1" })).toBe(2);
    expect(sampleOf(text, "porter_worker_claimed_rows_sum", { pool: "p", worker_id: "w-1" })).toBe(7);
    expect(sampleOf(text, "porter_worker_claimed_rows_count", { pool: "p", worker_id: "w-1" })).toBe(2);
    expect(sampleOf(text, "porter_worker_claim_seconds_bucket", { le: "0.002", pool: "p", worker_id: "w-1" })).toBe(1);
    expect(sampleOf(text, "porter_worker_claim_seconds_bucket", { le: "0.05", pool: "p", worker_id: "w-1" })).toBe(2);
    expect(sampleOf(text, "porter_worker_claim_seconds_sum", { pool: "p", worker_id: "w-1" })).toBeCloseTo(0.0315, 6);
    expect(sampleOf(text, "porter_worker_result_batch_rows_sum", { kind: "ack", pool: "p", worker_id: "w-1" })).toBe(5);
    expect(sampleOf(text, "porter_worker_result_batch_rows_sum", { kind: "fail", pool: "p", worker_id: "w-1" })).toBe(2);
    expect(sampleOf(text, "porter_worker_heartbeats_total", { pool: "p", worker_id: "w-1" })).toBe(1);
    expect(sampleOf(text, "porter_worker_heartbeat_leases_total", { pool: "p", worker_id: "w-1" })).toBe(3);
    expect(sampleOf(text, "porter_worker_attempts_total", { job_type: "a.job", outcome: "succeeded", pool: "p", worker_id: "w-1" })).toBe(4);
    expect(sampleOf(text, "porter_worker_attempts_total", { job_type: "a.job", outcome: "retry", pool: "p", worker_id: "w-1" })).toBe(1);
    expect(sampleOf(text, "porter_worker_attempts_total", { job_type: "b.job", outcome: "dead", pool: "p", worker_id: "w-1" })).toBe(1);
    expect(sampleOf(text, "porter_worker_slots", { pool: "p", worker_id: "w-1" })).toBe(8);
    expect(sampleOf(text, "porter_worker_slots_busy", { pool: "p", worker_id: "w-1" })).toBe(3);
    expect(sampleOf(text, "porter_worker_prefetch_buffered", { pool: "p", worker_id: "w-1" })).toBe(12);
    expect(sampleOf(text, "porter_worker_prefetch_limit", { pool: "p", worker_id: "w-1" })).toBe(40);
    expect(text).toMatch(/^porter_worker_nodejs_eventloop_lag_seconds\{/m);
  });

  it("failure outcomes by next state", () => {
    expect(["RETRY_WAIT", "DEAD", "CANCELLED", "EXPIRED"].map(failureOutcome)).toEqual(["retry", "dead", "cancelled", "expired"]);
  });
});

const withPort = (value: string) => parseEnv({ NODE_ENV: "test", PORTER_WORKER_METRICS_PORT: value });

describe("PORTER_WORKER_METRICS_PORT", () => {
  it("is a port, 0 for a free one, unset when empty; anything else fails naming it", () => {
    expect(withPort("9464").PORTER_WORKER_METRICS_PORT).toBe(9464);
    expect(withPort("0").PORTER_WORKER_METRICS_PORT).toBe(0);
    expect(withPort("").PORTER_WORKER_METRICS_PORT).toBeUndefined();
    expect(() => withPort("70000")).toThrow(/PORTER_WORKER_METRICS_PORT/);
    expect(() => withPort("x")).toThrow(/PORTER_WORKER_METRICS_PORT/);
  });
});
