import { defineHandler } from "@porter/sdk";
import type pg from "pg";
import { describe, expect, it } from "vitest";
import { createHandlerMap } from "../handlers/handler-map";
import { createLogger } from "../logger";
import { claimedJob } from "../testing/claimed-job";
import { Attempt, type AttemptDeps } from "./attempt";
import type { Completer } from "./completer";

const job = claimedJob({ jobType: "test.wait", leaseUntil: new Date(Date.now() + 30_000) }, new Date());

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
      db: undefined as unknown as pg.Pool,
      workerId: "w",
      version: "test",
      logger: createLogger({ level: "silent" }),
      handlers: createHandlerMap([handler]),
      completer: {
        ack: async () => {
          recorded.push("ack");
          return "applied";
        },
        fail: async () => {
          recorded.push("fail");
          return "applied";
        },
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
