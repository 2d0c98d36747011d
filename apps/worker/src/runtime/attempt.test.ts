import { defineHandler } from "@porter/sdk";
import type pg from "pg";
import { describe, expect, it } from "vitest";
import { createHandlerMap } from "../handlers/handler-map";
import { createLogger } from "../logger";
import { claimedJob } from "../testing/claimed-job";
import { Attempt, type AttemptDeps } from "./attempt";
import type { AckOwner, Completer } from "./completer";

const job = claimedJob({ jobType: "test.wait" }, new Date());

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
        ack: (_item: unknown, owner: AckOwner) => {
          recorded.push("ack");
          owner.flushed("applied");
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

  it("gives the handler a ctx whose members work destructured, and one that throws at once on a bad progress", async () => {
    let seen: Record<string, unknown> = {};
    const handler = defineHandler({
      type: "test.wait",
      run: async (_job, ctx) => {
        const { signal, attempt, workerId, lastCheckpoint, trace, progress, heartbeat, logger } = ctx;
        progress({ fraction: 0.5, step: "half" });
        let refused: unknown;
        try {
          progress({ fraction: 2 });
        } catch (error) {
          refused = error;
        }
        await heartbeat();
        seen = {
          aborted: signal.aborted,
          attempt,
          workerId,
          lastCheckpoint,
          traceId: trace.traceId,
          isLogger: typeof logger.info === "function",
          sameProgress: ctx.progress === progress,
          refused: refused instanceof Error,
        };
        return { ok: true };
      },
    });
    const acked: unknown[] = [];
    let heartbeats = 0;
    let ended = 0;
    const deps: AttemptDeps = {
      db: undefined as unknown as pg.Pool,
      workerId: "w-ctx",
      version: "test",
      logger: createLogger({ level: "silent" }),
      handlers: createHandlerMap([handler]),
      completer: {
        ack: (completion: unknown, owner: AckOwner) => {
          acked.push(completion);
          owner.flushed("applied");
        },
        fail: async () => "applied",
      } as unknown as Completer,
      hangGraceMs: 1000,
      heartbeat: async () => {
        heartbeats += 1;
      },
      onEnded: () => {
        ended += 1;
      },
    };
    const attempt = new Attempt(job, deps);
    await attempt.run();
    expect(seen).toEqual({
      aborted: false,
      attempt: job.attempt,
      workerId: "w-ctx",
      lastCheckpoint: null,
      traceId: job.traceId,
      isLogger: true,
      sameProgress: true,
      refused: true,
    });
    expect(heartbeats).toBe(1);
    expect(ended).toBe(1);
    expect(acked).toEqual([expect.objectContaining({ result: { ok: true }, progress: JSON.stringify({ fraction: 0.5, step: "half" }) })]);
  });

  it("fails the attempt of a handler that throws synchronously, and ends it once", async () => {
    const handler = defineHandler({
      type: "test.wait",
      run: (() => {
        throw new Error("at once");
      }) as never,
    });
    const failed: Array<{ error: { message: string } }> = [];
    let ended = 0;
    const deps: AttemptDeps = {
      db: undefined as unknown as pg.Pool,
      workerId: "w",
      version: "test",
      logger: createLogger({ level: "silent" }),
      handlers: createHandlerMap([handler]),
      completer: {
        ack: (_item: unknown, owner: AckOwner) => owner.flushed("applied"),
        fail: async (item: { error: { message: string } }) => {
          failed.push(item);
          return "applied";
        },
      } as unknown as Completer,
      hangGraceMs: 1000,
      heartbeat: async () => {},
      onEnded: () => {
        ended += 1;
      },
    };
    await new Attempt(job, deps).run();
    expect(failed.map((f) => f.error.message)).toEqual(["at once"]);
    expect(ended).toBe(1);
  });
});
