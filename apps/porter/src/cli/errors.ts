import { isAppError } from "@porter/contracts";
import { safeErrorMessage } from "@porter/db/safe-error";

/** The command line itself is wrong (unknown option, missing argument): exit code 2. */
export class UsageError extends Error {
  override readonly name = "UsageError";
}

/** A command ran but did not reach its goal (e.g. a drain timed out): exit code 1, no stack. */
export class CommandFailure extends Error {
  override readonly name = "CommandFailure";
  constructor(
    message: string,
    readonly code: string,
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
  }
}

/** How an error is reported: a stable code, a message for humans, and the process exit code. */
export type ErrorReport = { code: string; message: string; exitCode: 1 | 2; details?: Record<string, unknown> };

/**
 * Maps anything a command throws to its report: usage errors and invalid input (AppError
 * BAD_REQUEST) exit 2, every other failure exits 1. PostgreSQL errors a user can act on get a
 * message that says what to do.
 */
export const describeError = (error: unknown): ErrorReport => {
  if (error instanceof UsageError) return { code: "BAD_REQUEST", message: error.message, exitCode: 2 };
  if (isAppError(error)) {
    return { code: error.code, message: error.message, exitCode: error.code === "BAD_REQUEST" ? 2 : 1, ...(error.details ? { details: error.details } : {}) };
  }
  if (error instanceof CommandFailure) return { code: error.code, message: error.message, exitCode: 1, ...(error.details ? { details: error.details } : {}) };
  const pgCode = (error as { code?: unknown } | null)?.code;
  if (pgCode === "42P01" || pgCode === "42703") {
    return { code: "NOT_MIGRATED", message: `the database is not migrated (${(error as Error).message}): run npm run db:migrate`, exitCode: 1 };
  }
  if (pgCode === "ECONNREFUSED" || pgCode === "ENOTFOUND" || pgCode === "3D000" || pgCode === "28P01") {
    return { code: "DATABASE_UNAVAILABLE", message: `cannot reach the database: ${(error as Error).message}`, exitCode: 1 };
  }
  // A database error's message can quote the value it failed on (safe-error.ts): not that part.
  const message = error instanceof Error ? safeErrorMessage(error) || String(error) : String(error);
  return { code: "INTERNAL", message, exitCode: 1 };
};
