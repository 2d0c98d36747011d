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

  constructor(
    code: AppErrorCode,
    options: { message: string; retryAfterS?: number; details?: Record<string, unknown> },
  ) {
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
  constructor(
    message: string,
    options: { code?: string; retryAfterMs?: number; isThrottle?: boolean; cause?: unknown } = {},
  ) {
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
