import { ZDiagEffect, ZDiagFail, ZDiagHang, ZDiagSleep } from "@porter/contracts";
import { type AnyHandler, defineHandler, PermanentError, RetryableError } from "@porter/sdk";
import { z } from "zod";
import { sleepFor } from "./sleep";

/** `diag.sleep {ms}`: sleeps, honouring its signal (a cancel or timeout stops it at once). */
export const diagSleep = defineHandler({
  type: "diag.sleep",
  payload: ZDiagSleep,
  run: async (job, ctx) => {
    await sleepFor(job.payload.ms, ctx.signal);
    return { slept_ms: job.payload.ms };
  },
});

/** `diag.fail {mode, until_attempt?}`: fails (transient → retryable, permanent → dead) until `until_attempt`, then succeeds. */
export const diagFail = defineHandler({
  type: "diag.fail",
  payload: ZDiagFail,
  run: async (job) => {
    const { mode, until_attempt: untilAttempt } = job.payload;
    if (untilAttempt !== undefined && job.attempt >= untilAttempt) return { succeeded_on_attempt: job.attempt };
    const message = `diag.fail: ${mode} failure on attempt ${job.attempt}`;
    if (mode === "transient") throw new RetryableError(message, { code: "DIAG_TRANSIENT" });
    throw new PermanentError(message, { code: "DIAG_PERMANENT" });
  },
});

/**
 * `diag.effect {key, ms?}`: sleeps `ms` (honouring its signal), then applies one effect through
 * `ctx.effect` — incrementing `diag_effects.applied` for `key` — so a duplicated effect is visible.
 * Tests may add `after_ms`: a sleep after the effect committed (a crash between effect and ack),
 * `tx_only` to apply it through the `txOnly` path (its write is all through `tx`), and `statement`
 * to apply it as one statement (`ctx.effect(key, { text, values })`: `applied` is null when the
 * key had been applied before — the statement did not run).
 */
const DIAG_EFFECT_SQL = `INSERT INTO diag_effects (key, applied) VALUES ($1, 1)
  ON CONFLICT (key) DO UPDATE SET applied = diag_effects.applied + 1
  RETURNING applied`;

export const diagEffect = defineHandler({
  type: "diag.effect",
  payload: ZDiagEffect.extend({ after_ms: z.number().int().min(0).max(3_600_000).optional() }),
  run: async (job, ctx) => {
    const { key, ms, after_ms: afterMs, tx_only: txOnly, statement } = job.payload;
    if (ms) await sleepFor(ms, ctx.signal);
    const applied =
      statement === true
        ? ((await ctx.effect<{ applied: number }>(key, { text: DIAG_EFFECT_SQL, values: [key] })).rows[0]?.applied ?? null)
        : await ctx.effect(
            key,
            async (tx) => {
              const { rows } = await tx.query<{ applied: number }>(DIAG_EFFECT_SQL, [key]);
              return rows[0]?.applied ?? null;
            },
            { txOnly: txOnly === true },
          );
    await ctx.checkpoint({ effect: key, applied });
    if (afterMs) await sleepFor(afterMs, ctx.signal);
    return { key, applied };
  },
});

/** `diag.hang {}`: ignores its abort signal and never settles, to exercise timeout handling. */
export const diagHang = defineHandler({
  type: "diag.hang",
  payload: ZDiagHang,
  run: () => new Promise<never>(() => undefined),
});

/** The built-in diagnostic handlers every pool can run. */
export const diagHandlers: AnyHandler[] = [diagSleep, diagFail, diagEffect, diagHang];
