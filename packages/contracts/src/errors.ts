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
 */
export class RetryableError extends Error {
  override readonly name = "RetryableError";
  readonly code: string;
  readonly retryAfterMs: number | undefined;
  constructor(message: string, options: { code?: string; retryAfterMs?: number; cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    this.code = options.code ?? "RETRYABLE";
    this.retryAfterMs = options.retryAfterMs;
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
