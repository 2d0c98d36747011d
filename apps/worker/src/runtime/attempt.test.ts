import { type AnyHandler, defineHandler } from "@porter/sdk";
import type pg from "pg";
import { describe, expect, it } from "vitest";
import { createHandlerMap } from "../handlers/handler-map";
import { createLogger } from "../logger";
import { claimedJob } from "../testing/claimed-job";
import { Attempt, type AttemptDeps } from "./attempt";
import type { AckOwner, Completer } from "./completer";

const job = claimedJob({ jobType: "test.wait" });

/** An attempt's dependencies without a database: the completer records what it is given, in order. */
const fakeDeps = (handler: AnyHandler, workerId = "w") => {
  const recorded: Array<{ kind: "ack" | "fail"; item: unknown }> = [];
  let heartbeats = 0;
  let ended = 0;
  const deps: AttemptDeps = {
    db: undefined as unknown as pg.Pool,
    workerId,
    version: "test",
    logger: createLogger({ level: "silent" }),
    handlers: createHandlerMap([handler]),
    completer: {
      ack: (item: unknown, owner: AckOwner) => {
        recorded.push({ kind: "ack", item });
        owner.flushed("applied");
      },
      fail: async (item: unknown) => {
        recorded.push({ kind: "fail", item });
        return "applied";
      },
    } as unknown as Completer,
    hangGraceMs: 1000,
    heartbeat: async () => {
      heartbeats += 1;
    },
    onEnded: () => {
      ended += 1;
    },
  };
  return { deps, recorded, heartbeats: () => heartbeats, ended: () => ended };
};

describe("Attempt", () => {
  it("a handler that reads its signal only after the lease was lost finds it aborted", async () => {
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let seen: boolean | undefined;
    const fake = fakeDeps(
      defineHandler({
        type: "test.wait",
        run: async (_job, ctx) => {
          await released; // the signal object is first touched below, after the lease is gone
          seen = ctx.signal.aborted;
          return null;
        },
      }),
    );
    const attempt = new Attempt(job, fake.deps);
    const done = attempt.run();
    attempt.loseLease();
    await done;
    release();
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(seen).toBe(true);
    expect(fake.recorded).toEqual([]); // a lost lease records nothing
    expect(fake.ended()).toBe(1);
  });

  it("gives the handler a ctx whose members work destructured, and one that throws at once on a bad progress", async () => {
    let seen: Record<string, unknown> = {};
    const fake = fakeDeps(
      defineHandler({
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
      }),
      "w-ctx",
    );
    await new Attempt(job, fake.deps).run();
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
    expect(fake.heartbeats()).toBe(1);
    expect(fake.ended()).toBe(1);
    expect(fake.recorded).toEqual([
      { kind: "ack", item: expect.objectContaining({ result: { ok: true }, progress: JSON.stringify({ fraction: 0.5, step: "half" }) }) },
    ]);
  });

  it("fails the attempt of a handler that throws synchronously, and ends it once", async () => {
    const fake = fakeDeps(
      defineHandler({
        type: "test.wait",
        run: (() => {
          throw new Error("at once");
        }) as never,
      }),
    );
    await new Attempt(job, fake.deps).run();
    expect(fake.recorded.map((r) => [r.kind, (r.item as { error: { message: string } }).error.message])).toEqual([["fail", "at once"]]);
    expect(fake.ended()).toBe(1);
  });
});
