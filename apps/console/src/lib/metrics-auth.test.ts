import { describe, expect, it } from "vitest";
import { isLoopbackHost, refuseMetrics } from "./metrics-auth";

const TOKEN = "metrics-token-0123456789";

describe("refuseMetrics", () => {
  it("without a token: open on loopback only", () => {
    for (const host of ["127.0.0.1", "127.1.2.3", "localhost", "::1", "[::1]"]) expect(refuseMetrics(null, { host }), host).toBeNull();
    for (const host of ["0.0.0.0", "::", "192.168.1.5", "porter.example.com"]) {
      expect(refuseMetrics(null, { host })?.status, host).toBe(503);
      expect(refuseMetrics(null, { host })?.message).toMatch(/PORTER_METRICS_TOKEN/);
    }
  });

  it("with a token: the right Bearer token only, wherever it listens", () => {
    for (const host of ["127.0.0.1", "0.0.0.0"]) {
      expect(refuseMetrics(`Bearer ${TOKEN}`, { token: TOKEN, host })).toBeNull();
      expect(refuseMetrics(`bearer ${TOKEN}`, { token: TOKEN, host })).toBeNull();
      expect(refuseMetrics(null, { token: TOKEN, host })?.status).toBe(401);
      expect(refuseMetrics(`Bearer ${TOKEN}x`, { token: TOKEN, host })?.status).toBe(401);
      expect(refuseMetrics(`Bearer ${TOKEN.slice(1)}`, { token: TOKEN, host })?.status).toBe(401);
      expect(refuseMetrics(`Basic ${TOKEN}`, { token: TOKEN, host })?.status).toBe(401);
    }
  });

  it("isLoopbackHost", () => {
    expect(isLoopbackHost("127.0.0.1")).toBe(true);
    expect(isLoopbackHost("0.0.0.0")).toBe(false);
    expect(isLoopbackHost("128.0.0.1")).toBe(false);
    expect(isLoopbackHost("127.0.0.1.evil")).toBe(false);
  });
});
