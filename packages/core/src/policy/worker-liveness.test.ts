import { describe, expect, it } from "vitest";
import { isWorkerLost, WORKER_HEARTBEAT_INTERVAL_MS, WORKER_LOST_AFTER_MS } from "./worker-liveness";

describe("worker liveness", () => {
  const beat = new Date("2026-12-01T12:00:00.000Z");
  const after = (ms: number) => new Date(beat.getTime() + ms);

  it("is lost after a few missed heartbeats, not after a minute", () => {
    expect(WORKER_LOST_AFTER_MS).toBeGreaterThanOrEqual(3 * WORKER_HEARTBEAT_INTERVAL_MS);
    expect(WORKER_LOST_AFTER_MS).toBeLessThanOrEqual(5 * WORKER_HEARTBEAT_INTERVAL_MS);
    expect(WORKER_LOST_AFTER_MS).toBeLessThan(30_000);
  });

  it("a late heartbeat is not lost; past the threshold it is", () => {
    expect(isWorkerLost(beat, after(WORKER_HEARTBEAT_INTERVAL_MS + 1_000))).toBe(false);
    expect(isWorkerLost(beat, after(WORKER_LOST_AFTER_MS))).toBe(false);
    expect(isWorkerLost(beat, after(WORKER_LOST_AFTER_MS + 1))).toBe(true);
    expect(isWorkerLost(beat, after(-5_000))).toBe(false);
  });
});
