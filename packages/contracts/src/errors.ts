/**
 * One error type for everything a caller did wrong or may retry. Each code has one HTTP status;
 * the tRPC error formatter in @porter/api maps them.
 */
export const APP_ERROR_STATUS = {
  BAD_REQUEST: 400,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  CONFLICT: 409,
  PAYLOAD_TOO_LARGE: 413,
  TOO_MANY_REQUESTS: 429,
} as const;
export type AppErrorCode = keyof typeof APP_ERROR_STATUS;

export class AppError extends Error {
  override readonly name = "AppError";
  readonly code: AppErrorCode;
  /** Seconds a caller should wait before retrying (429). */
  readonly retryAfterS: number | undefined;
  readonly details: Record<string, unknown> | undefined;

  constructor(code: AppErrorCode, options: { message: string; retryAfterS?: number; details?: Record<string, unknown> }) {
    super(options.message);
    this.code = code;
    this.retryAfterS = options.retryAfterS;
    this.details = options.details;
  }

  get httpStatus(): number {
    return APP_ERROR_STATUS[this.code];
  }
}

export const isAppError = (error: unknown): error is AppError => error instanceof AppError;

/**
 * Thrown by a handler for a failure worth retrying (a flaky dependency, a provider's 429).
 * `retryAfterMs` (from a `Retry-After` header, say) is honoured as the minimum backoff.
 * `isThrottle`: the provider behind the job's resource key is rate limiting (HTTP 429): the key
 * pauses for everyone until `retryAfterMs` and its concurrency is halved, recovering step by step.
 */
export class RetryableError extends Error {
  override readonly name = "RetryableError";
  readonly code: string;
  readonly retryAfterMs: number | undefined;
  readonly isThrottle: boolean;
  constructor(message: string, options: { code?: string; retryAfterMs?: number; isThrottle?: boolean; cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    this.code = options.code ?? (options.isThrottle ? "RATE_LIMITED" : "RETRYABLE");
    this.retryAfterMs = options.retryAfterMs;
    this.isThrottle = options.isThrottle ?? false;
  }
}

/** Thrown by a handler for a failure no retry can fix (invalid payload, permission, budget). */
export class PermanentError extends Error {
  override readonly name = "PermanentError";
  readonly code: string;
  constructor(message: string, options: { code?: string; cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    this.code = options.code ?? "PERMANENT";
  }
}

/**
 * The error codes Porter itself records in a failed attempt's or a dead job's `error.code` (what
 * `redrive --error-code` and the console's filters match), each with its class and meaning.
 * Handlers add their own with `new RetryableError(msg, { code })` / `new PermanentError(msg,
 * { code })`; an error thrown with a string `code` of its own (a driver's ECONNRESET, a SQLSTATE)
 * is recorded with that code. `porter errors` prints this list.
 */
export const JOB_ERROR_CODES = {
  RETRYABLE: { class: "retryable", description: "the handler threw a RetryableError without a code of its own" },
  RATE_LIMITED: { class: "retryable", description: "the handler threw a throttle RetryableError (a provider's 429); the resource key slows down" },
  PERMANENT: { class: "permanent", description: "the handler threw a PermanentError without a code of its own" },
  INVALID_PAYLOAD: { class: "permanent", description: "the payload failed the handler's schema (a ZodError), or a handler said so" },
  PERMISSION_DENIED: { class: "permanent", description: "a handler's error with this code: not allowed, no retry can fix it" },
  BUDGET_EXCEEDED: { class: "permanent", description: "a handler's error with this code: a spending or quota budget is used up" },
  NO_HANDLER: { class: "permanent", description: "no worker of the pool has a handler for the job type" },
  RESULT_NOT_SERIALIZABLE: { class: "permanent", description: "the handler returned a result that is not JSON" },
  RESULT_REJECTED: { class: "permanent", description: "the database refused the handler's result" },
  TIMEOUT: { class: "timeout", description: "the attempt ran past its timeout_s and was aborted" },
  LEASE_EXPIRED: { class: "lease_expired", description: "the worker stopped heartbeating (crashed, lost its connection) and the lease ran out" },
  CANCELLED: { class: "cancelled", description: "the job was cancelled while it ran" },
  DEADLINE_EXCEEDED: { class: "expired", description: "the job's deadline_at passed before it succeeded" },
  UNKNOWN: { class: "retryable", description: "the handler threw something without a code (retried: unknown errors are retryable)" },
  DIAG_TRANSIENT: { class: "retryable", description: "diag.fail in mode transient (diagnostics)" },
  DIAG_PERMANENT: { class: "permanent", description: "diag.fail in mode permanent (diagnostics)" },
  DEPENDENCY_UNAVAILABLE: { class: "retryable", description: "a simulated handler's dependency was down (demo job types)" },
  WEBHOOK_UNAVAILABLE: { class: "retryable", description: "webhook.deliver: the endpoint answered 5xx, timed out, or the connection or TLS handshake failed" },
  WEBHOOK_REJECTED: { class: "permanent", description: "webhook.deliver: the endpoint answered a 4xx other than 429, or a redirect (not followed)" },
  WEBHOOK_ENDPOINT_GONE: { class: "permanent", description: "webhook.deliver: the webhook endpoint the job names was deleted" },
} as const satisfies Record<string, { class: string; description: string }>;

/** One of Porter's own job error codes (see JOB_ERROR_CODES). */
export type JobErrorCode = keyof typeof JOB_ERROR_CODES;
/** Porter's own job error codes, in the order JOB_ERROR_CODES lists them. */
export const JOB_ERROR_CODE_NAMES = Object.keys(JOB_ERROR_CODES) as JobErrorCode[];
