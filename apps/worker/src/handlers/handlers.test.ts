import { TimeoutError } from "@porter/core";
import { type HandlerContext, type Job, PermanentError, RetryableError } from "@porter/sdk";
import { describe, expect, it } from "vitest";
import { createLogger } from "../logger";
import { diagEffect, diagFail, diagSleep } from "./diag";
import { createHandlerMap } from "./handler-map";
import { defaultHandlerMap } from "./index";

const context = (signal: AbortSignal): HandlerContext => ({
  signal,
  attempt: 1,
  workerId: "w",
  logger: createLogger({ level: "silent" }),
  checkpoint: async () => undefined,
  progress: () => undefined,
  lastCheckpoint: null,
  trace: { traceId: "trace", spanId: null, traceparent: null, parent: null, isRecording: false },
  heartbeat: async () => undefined,
  effect: async () => {
    throw new Error("no effects in unit tests");
  },
});

const job = <P>(payload: P, attempt = 1): Job<P> => ({
  job_id: "00000000-0000-4000-8000-000000000000",
  job_type: "t",
  tenant_id: "tenant_A",
  payload,
  attempt,
  max_attempts: 5,
  deadline_at: null,
  timeout_s: 30,
  trace_id: "trace",
  idempotency_key: "k",
  priority: 50,
});

describe("handler map", () => {
  it("ships the diag set and every simulated demo job type", () => {
    expect([...defaultHandlerMap().keys()].sort()).toEqual(
      [
        "agent.run",
        "diag.effect",
        "diag.fail",
        "diag.hang",
        "diag.sleep",
        "document.parse",
        "email.campaign",
        "email.send",
        "embed.chunks",
        "harvester.sync",
        "webhook.deliver",
      ].sort(),
    );
  });

  it("refuses two handlers for one type", () => {
    expect(() => createHandlerMap([diagSleep, diagSleep])).toThrow(/two handlers/);
  });
});

describe("diag handlers", () => {
  it("diag.sleep stops as soon as its signal aborts, with the abort's reason", async () => {
    const controller = new AbortController();
    const running = diagSleep.run(job({ ms: 60_000 }), context(controller.signal));
    controller.abort(new TimeoutError(5));
    await expect(running).rejects.toBeInstanceOf(TimeoutError);
  });

  it("diag.fail fails by mode until until_attempt, then succeeds", async () => {
    const signal = new AbortController().signal;
    await expect(diagFail.run(job({ mode: "transient" as const, until_attempt: 3 }, 2), context(signal))).rejects.toBeInstanceOf(RetryableError);
    await expect(diagFail.run(job({ mode: "permanent" as const }, 9), context(signal))).rejects.toBeInstanceOf(PermanentError);
    await expect(diagFail.run(job({ mode: "transient" as const, until_attempt: 3 }, 3), context(signal))).resolves.toEqual({ succeeded_on_attempt: 3 });
  });
});

describe("diag.effect", () => {
  // The chaos mix sends a third of its diag.effect jobs with tx_only and a third with statement
  // (apps/porter/src/chaos/producers.ts): the flags must reach ctx.effect, or every third tests the
  // default path. The database side of each path is tested in core (apply-effect) and in the
  // worker's fencing and effect-locks suites.
  it("applies its effect through the txOnly path or as one statement exactly when the payload says so", async () => {
    const calls: Array<{ key: string; how: unknown }> = [];
    const ctx: HandlerContext = {
      ...context(new AbortController().signal),
      effect: (async (key: string, fnOrStatement: unknown, options?: unknown) => {
        if (typeof fnOrStatement === "function") {
          calls.push({ key, how: options });
          return 1;
        }
        calls.push({ key, how: fnOrStatement });
        return { applied: true, rowCount: 1, rows: [{ applied: 2 }] };
      }) as HandlerContext["effect"],
    };
    await expect(diagEffect.run(job({ key: "a", tx_only: true }), ctx)).resolves.toEqual({ key: "a", applied: 1 });
    await diagEffect.run(job({ key: "b" }), ctx);
    await diagEffect.run(job({ key: "c", tx_only: false }), ctx);
    await expect(diagEffect.run(job({ key: "d", statement: true }), ctx)).resolves.toEqual({ key: "d", applied: 2 });
    expect(calls).toEqual([
      { key: "a", how: { txOnly: true } },
      { key: "b", how: { txOnly: false } },
      { key: "c", how: { txOnly: false } },
      { key: "d", how: { text: expect.stringContaining("INSERT INTO diag_effects"), values: ["d"] } },
    ]);
  });
});

describe("simulated handlers' payloads", () => {
  const handlers = defaultHandlerMap();

  it("accept references with extra fields", () => {
    expect(handlers.get("document.parse")!.parsePayload({ source_ref: "s3://docs/a.pdf", version: 3, mime: "application/pdf" })).toMatchObject({
      source_ref: "s3://docs/a.pdf",
      mime: "application/pdf",
    });
    expect(handlers.get("email.send")!.parsePayload({ template_ref: "tpl://welcome", recipient_ref: "user://42" })).toBeTruthy();
  });

  it("refuse a payload without any reference, or with a mistyped one", () => {
    expect(() => handlers.get("agent.run")!.parsePayload({ prompt: "inline text" })).toThrow(PermanentError);
    expect(() => handlers.get("embed.chunks")!.parsePayload({ artifact_ref: 42 })).toThrow(/INVALID|invalid payload/);
  });
});
