import { z } from "zod";

/** Payloads of the built-in diagnostic job types every pool can run. */
export const ZDiagSleep = z.strictObject({ ms: z.number().int().min(0).max(3_600_000) });
export const ZDiagFail = z.strictObject({
  mode: z.enum(["transient", "permanent"]),
  /** Fails until this attempt, then succeeds. */
  until_attempt: z.number().int().min(1).optional(),
});
export const ZDiagEffect = z.strictObject({
  key: z.string().min(1).max(200),
  ms: z.number().int().min(0).optional(),
  /** Applies the effect with `ctx.effect(key, fn, { txOnly: true })`: fn runs first, the key is claimed at commit. */
  tx_only: z.boolean().optional(),
  /** Applies the effect as one statement, `ctx.effect(key, { text, values })`: one message. Not with `tx_only`. */
  statement: z.boolean().optional(),
});
export const ZDiagHang = z.strictObject({});

export const DIAG_JOB_TYPES = ["diag.sleep", "diag.fail", "diag.effect", "diag.hang"] as const;
