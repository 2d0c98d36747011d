import { APP_ERROR_STATUS, AppError, type AppErrorCode } from "@porter/contracts";
import { TRPCError } from "@trpc/server";

/**
 * The AppError behind `error`, if any. Checks the class and, failing that, the shape: a bundler
 * may load @porter/contracts twice (server components and route handlers), and `instanceof`
 * across two copies of a class is false.
 */
export const asAppError = (error: unknown): AppError | undefined => {
  if (error instanceof AppError) return error;
  if (
    error instanceof Error
    && error.name === "AppError"
    && typeof (error as unknown as { code?: unknown }).code === "string"
    && (error as unknown as { code: string }).code in APP_ERROR_STATUS
  ) {
    return error as AppError;
  }
  return undefined;
};

/** The AppError a tRPC error wraps (thrown by a procedure or by @porter/core). */
export const appErrorOf = (error: TRPCError): AppError | undefined => asAppError(error) ?? asAppError(error.cause);

/** Each AppError code is a tRPC code of the same name (and the same HTTP status). */
export const toTRPCError = (error: AppError): TRPCError => new TRPCError({ code: error.code satisfies AppErrorCode, message: error.message, cause: error });

/** Issues of a schema error (zod, or tRPC's standard-schema error), if `cause` is one. */
export const schemaIssuesOf = (cause: unknown): unknown[] | undefined => {
  if (cause && typeof cause === "object" && Array.isArray((cause as { issues?: unknown }).issues)) {
    return (cause as { issues: unknown[] }).issues;
  }
  return undefined;
};

/** One-line summary of schema issues: `jobs.3.priority: Too big…; payload: Required`. */
export const summarizeIssues = (issues: unknown[]): string =>
  issues
    .slice(0, 5)
    .map((issue) => {
      const { path, message } = issue as { path?: PropertyKey[]; message?: string };
      const where = path && path.length > 0 ? `${path.map(String).join(".")}: ` : "";
      return `${where}${message ?? "invalid"}`;
    })
    .join("; ") + (issues.length > 5 ? `; … ${issues.length - 5} more` : "");

const UNAVAILABLE_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "ENOTFOUND",
  "EAI_AGAIN",
  "57P01", // admin_shutdown
  "57P02", // crash_shutdown
  "57P03", // cannot_connect_now
  "53300", // too_many_connections
]);

/**
 * Whether `error` (or its cause) says the database cannot be reached right now: a refused or
 * timed-out connection, a server shutting down or out of connections. Such errors are a 503 with
 * Retry-After, not a 500: the request was fine and may be sent again.
 */
export const isDatabaseUnavailable = (error: unknown): boolean => {
  for (let e = error, depth = 0; e && typeof e === "object" && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const { code, message } = e as { code?: unknown; message?: unknown };
    if (typeof code === "string" && UNAVAILABLE_CODES.has(code)) return true;
    if (typeof message === "string" && /timeout exceeded when trying to connect|Connection terminated/i.test(message)) return true;
  }
  return false;
};

/** Seconds a caller should wait after a 503 for an unreachable database. */
export const DATABASE_UNAVAILABLE_RETRY_AFTER_S = 1;

/** Message shown for errors we did not raise on purpose (driver errors, bugs): nothing internal. */
export const INTERNAL_ERROR_MESSAGE = "internal server error";
