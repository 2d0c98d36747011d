// Validation of what a handler reports through its context: progress and checkpoints. Pure (no
// I/O), shared by the worker's runtime and by anyone testing a handler. Bad input throws a
// `HandlerContextError` in the handler and nothing is written.
import { PermanentError } from "@porter/contracts";

/** What `ctx.progress()` takes: any subset of fraction (0..1), message (≤ 200 chars) and step (≤ 100 chars). */
export type Progress = { fraction?: number; message?: string; step?: string };

/** Bounds of a progress report and a checkpoint. */
export const PROGRESS_MESSAGE_MAX = 200;
export const PROGRESS_STEP_MAX = 100;
/** A checkpoint's JSON (UTF-8) may take at most this many bytes. */
export const CHECKPOINT_MAX_BYTES = 16 * 1024;

/**
 * Misuse of `ctx.progress` or `ctx.checkpoint` (code INVALID_PROGRESS, CHECKPOINT_TOO_LARGE or
 * CHECKPOINT_NOT_JSON). A PermanentError: left uncaught it fails the job without a retry, since
 * the same code would report the same value again.
 */
export class HandlerContextError extends PermanentError {
  constructor(code: "INVALID_PROGRESS" | "CHECKPOINT_TOO_LARGE" | "CHECKPOINT_NOT_JSON", message: string) {
    super(message, { code });
  }
}

const invalid = (why: string) => new HandlerContextError("INVALID_PROGRESS", `ctx.progress: ${why}`);

/** Validates a progress report and returns it with only its known fields; throws HandlerContextError. */
export const validateProgress = (input: unknown): Progress => {
  if (typeof input !== "object" || input === null || Array.isArray(input)) throw invalid("expected an object {fraction?, message?, step?}");
  const { fraction, message, step, ...rest } = input as Record<string, unknown>;
  const unknownKeys = Object.keys(rest);
  if (unknownKeys.length > 0) throw invalid(`unknown field ${unknownKeys.map((k) => JSON.stringify(k)).join(", ")}`);
  const out: Progress = {};
  if (fraction !== undefined) {
    if (typeof fraction !== "number" || !Number.isFinite(fraction) || fraction < 0 || fraction > 1) throw invalid("fraction must be a number from 0 to 1");
    out.fraction = fraction;
  }
  if (message !== undefined) {
    if (typeof message !== "string" || message.length > PROGRESS_MESSAGE_MAX)
      throw invalid(`message must be a string of at most ${PROGRESS_MESSAGE_MAX} characters`);
    out.message = message;
  }
  if (step !== undefined) {
    if (typeof step !== "string" || step.length > PROGRESS_STEP_MAX) throw invalid(`step must be a string of at most ${PROGRESS_STEP_MAX} characters`);
    out.step = step;
  }
  return out;
};

/**
 * Serializes a checkpoint to the JSON that is stored; throws HandlerContextError when it is not
 * JSON (a cycle, a BigInt, undefined, a function) or is over CHECKPOINT_MAX_BYTES.
 */
export const encodeCheckpoint = (data: unknown): string => {
  let json: string | undefined;
  try {
    json = JSON.stringify(data);
  } catch (error) {
    throw new HandlerContextError("CHECKPOINT_NOT_JSON", `ctx.checkpoint: the data is not JSON-serializable: ${(error as Error).message}`);
  }
  if (json === undefined) throw new HandlerContextError("CHECKPOINT_NOT_JSON", "ctx.checkpoint: the data is not JSON-serializable (undefined or a function)");
  const bytes = Buffer.byteLength(json, "utf8");
  if (bytes > CHECKPOINT_MAX_BYTES) {
    throw new HandlerContextError("CHECKPOINT_TOO_LARGE", `ctx.checkpoint: ${bytes} bytes of JSON, over the ${CHECKPOINT_MAX_BYTES}-byte limit`);
  }
  return json;
};
