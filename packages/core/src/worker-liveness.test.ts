import { describe, expect, it } from "vitest";
import { isWorkerLost, WORKER_HEARTBEAT_INTERVAL_MS, WORKER_LOST_AFTER_MS } from "./worker-liveness";

describe("worker liveness", () => {
  it("counts a worker lost only after several missed heartbeats", () => {
    expect(WORKER_LOST_AFTER_MS).toBeGreaterThanOrEqual(3 * WORKER_HEARTBEAT_INTERVAL_MS);
    const now = new Date("2026-12-01T12:00:00Z");
    expect(isWorkerLost(new Date(now.getTime() - WORKER_HEARTBEAT_INTERVAL_MS), now)).toBe(false);
    expect(isWorkerLost(new Date(now.getTime() - WORKER_LOST_AFTER_MS), now)).toBe(false);
    expect(isWorkerLost(new Date(now.getTime() - WORKER_LOST_AFTER_MS - 1), now)).toBe(true);
  });
});
