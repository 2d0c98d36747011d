import { PermanentError, RetryableError } from "@porter/contracts";

/** How a handler's failure is treated. */
export type FailureClass = "retryable" | "permanent" | "timeout" | "cancelled";

export type ClassifiedFailure = {
  class: FailureClass;
  code: string;
  message: string;
  retryAfterMs: number | undefined;
};

/** Raised by the worker when an attempt ran past its timeout. */
export class TimeoutError extends Error {
  override readonly name = "TimeoutError";
  constructor(readonly timeoutMs: number) {
    super(`attempt exceeded its timeout of ${timeoutMs} ms`);
  }
}

/** Raised by the worker when a running job was cancelled and its handler stopped. */
export class CancelledError extends Error {
  override readonly name = "CancelledError";
  constructor(readonly reason: string | undefined) {
    super(reason ? `cancelled: ${reason}` : "cancelled");
  }
}

const MAX_MESSAGE = 2000;

/**
 * Classifies anything a handler threw. Only retryable failures are retried. Unknown errors are
 * retryable; invalid payloads (zod), permission and budget errors are permanent.
 */
export const classifyFailure = (error: unknown): ClassifiedFailure => {
  const message = (error instanceof Error ? error.message : String(error)).slice(0, MAX_MESSAGE);
  if (error instanceof CancelledError) return { class: "cancelled", code: "CANCELLED", message, retryAfterMs: undefined };
  if (error instanceof TimeoutError) return { class: "timeout", code: "TIMEOUT", message, retryAfterMs: undefined };
  if (error instanceof PermanentError) return { class: "permanent", code: error.code, message, retryAfterMs: undefined };
  if (error instanceof RetryableError) {
    return { class: "retryable", code: error.code, message, retryAfterMs: error.retryAfterMs };
  }
  if (error instanceof Error && error.name === "ZodError") {
    return { class: "permanent", code: "INVALID_PAYLOAD", message, retryAfterMs: undefined };
  }
  const rawCode = error instanceof Error ? (error as Error & { code?: unknown }).code : undefined;
  const code = typeof rawCode === "string" ? rawCode : "UNKNOWN";
  if (code === "PERMISSION_DENIED" || code === "BUDGET_EXCEEDED" || code === "INVALID_PAYLOAD") {
    return { class: "permanent", code, message, retryAfterMs: undefined };
  }
  return { class: "retryable", code, message, retryAfterMs: undefined };
};
