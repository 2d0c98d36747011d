import { describe, expect, it } from "vitest";
import { bucketOf, bucketUpperMs, histogramQuantile } from "./flow";
import { backlogSignals, desiredWorkers } from "./signals";

const hist = (entries: Record<number, number>): number[] => Array.from({ length: 29 }, (_, b) => entries[b] ?? 0);

describe("histogram buckets", () => {
  it("bucket 0 is < 1 ms, bucket k is [2^(k-1), 2^k) ms, 28 holds the rest", () => {
    expect([0, 0.99, 1, 1.99, 2, 3.99, 4, 1023, 1024, 2 ** 27 - 1, 2 ** 27, 1e12].map(bucketOf)).toEqual([0, 0, 1, 1, 2, 2, 3, 10, 11, 27, 28, 28]);
    expect([0, 1, 10, 28].map(bucketUpperMs)).toEqual([1, 2, 1024, Number.POSITIVE_INFINITY]);
  });

  it("quantiles are the bucket of the observation of rank ⌈q·n⌉", () => {
    const h = hist({ 3: 50, 5: 45, 10: 4, 28: 1 });
    expect(histogramQuantile(h, 0.5)).toEqual({ bucket: 3, ms: 8 });
    expect(histogramQuantile(h, 0.51)).toEqual({ bucket: 5, ms: 32 });
    expect(histogramQuantile(h, 0.99)).toEqual({ bucket: 10, ms: 1024 });
    expect(histogramQuantile(h, 1)).toEqual({ bucket: 28, ms: 2 ** 27 });
    expect(histogramQuantile(hist({}), 0.5)).toBeNull();
  });
});

describe("backlog signals", () => {
  const base = { ready: 100, meanRunS: 2, effectiveConcurrency: 10, arrivalPerS: 1, completionPerS: 3, oldestClaimableAgeS: 5, targetWaitS: 30 };

  it("backlog seconds = ready × mean run ÷ concurrency; drain = ready ÷ net completion rate", () => {
    expect(backlogSignals(base)).toEqual({ backlogS: 20, drainS: 50, isGrowing: false, projectedWaitS: 20, isAtRisk: false });
  });

  it("growing when arrivals keep up with completions: no drain time, projected wait at least the oldest age", () => {
    expect(backlogSignals({ ...base, arrivalPerS: 3, oldestClaimableAgeS: 45 })).toEqual({
      backlogS: 20,
      drainS: null,
      isGrowing: true,
      projectedWaitS: 45,
      isAtRisk: true,
    });
  });

  it("at risk when the projected wait passes the target; never without a target", () => {
    expect(backlogSignals({ ...base, ready: 200 }).isAtRisk).toBe(true); // 40 s > 30 s
    expect(backlogSignals({ ...base, ready: 200, targetWaitS: null }).isAtRisk).toBe(false);
  });

  it("no concurrency at all (no live worker, paused): waiting work is an infinite wait", () => {
    expect(backlogSignals({ ...base, effectiveConcurrency: 0 })).toMatchObject({ backlogS: null, projectedWaitS: Number.POSITIVE_INFINITY, isAtRisk: true });
    expect(backlogSignals({ ...base, ready: 0, effectiveConcurrency: 0 })).toMatchObject({ backlogS: 0, drainS: 0, isGrowing: false, isAtRisk: false });
  });
});

describe("desired workers", () => {
  it("keeps up with arrivals and works the backlog off within the target, per worker's concurrency", () => {
    // 5/s × 2 s = 10 busy + 300 × 2 s ÷ 60 s = 10 more → 20 slots → 2 workers of 10.
    expect(desiredWorkers([{ ready: 300, arrivalPerS: 5, meanRunS: 2, targetWaitS: 60, limit: null }], 10)).toBe(2);
  });

  it("fewer when a limit (a throttled resource key) caps what more workers could run", () => {
    expect(desiredWorkers([{ ready: 300, arrivalPerS: 5, meanRunS: 2, targetWaitS: 60, limit: 4 }], 10)).toBe(1);
  });

  it("no work: none; work but no run time yet: one", () => {
    expect(desiredWorkers([{ ready: 0, arrivalPerS: 0, meanRunS: null, targetWaitS: 60, limit: null }], 10)).toBe(0);
    expect(desiredWorkers([{ ready: 5, arrivalPerS: 0, meanRunS: null, targetWaitS: 60, limit: null }], 10)).toBe(1);
  });
});
