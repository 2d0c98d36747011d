import type { ClaimedJob } from "@porter/core";
import { defineHandler } from "@porter/sdk";
import type pg from "pg";
import { describe, expect, it } from "vitest";
import { createHandlerRegistry } from "../handlers/registry";
import { createLogger } from "../logger";
import { Attempt, type AttemptDeps } from "./attempt";
import type { Completer } from "./completer";

const now = new Date();
const job: ClaimedJob = {
  id: "1",
  jobId: "00000000-0000-7000-8000-000000000001",
  jobType: "test.wait",
  queueId: "q",
  tenantId: "t",
  payload: {},
  priority: 50,
  idempotencyKey: "k",
  attempt: 1,
  maxAttempts: 3,
  timeoutS: 30,
  deadlineAt: null,
  traceId: "trace",
  createdAt: now,
  claimedAt: now,
  leaseToken: "9",
  leaseUntil: new Date(now.getTime() + 30_000),
  leaseSeconds: 30,
  backoffBaseMs: 1000,
  backoffCapMs: 60_000,
  cancelRequested: false,
  resourceKeyId: null,
};

describe("Attempt", () => {
  it("a handler that reads its signal only after the lease was lost finds it aborted", async () => {
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let seen: boolean | undefined;
    const handler = defineHandler({
      type: "test.wait",
      run: async (_job, ctx) => {
        await released; // the signal object is first touched below, after the lease is gone
        seen = ctx.signal.aborted;
        return null;
      },
    });
    const recorded: string[] = [];
    const deps: AttemptDeps = {
      pool: undefined as unknown as pg.Pool,
      workerId: "w",
      version: "test",
      logger: createLogger({ level: "silent" }),
      handlers: createHandlerRegistry([handler]),
      completer: {
        ack: async () => (recorded.push("ack"), "applied"),
        fail: async () => (recorded.push("fail"), "applied"),
      } as unknown as Completer,
      hangGraceMs: 1000,
      heartbeat: async () => {},
    };
    const attempt = new Attempt(job, deps);
    const done = attempt.run();
    attempt.loseLease();
    await done;
    release();
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(seen).toBe(true);
    expect(recorded).toEqual([]); // a lost lease records nothing
  });
});
