import pino, { type Logger } from "pino";
import { isSafeError, safeErrorMessage, scrubErrors, serializeError } from "./safe-error";

export type { Logger };

// House style is message first, fields after. pino's types only know (fields, message) and printf
// arguments, so this adds the (message, fields) overload; the `logMethod` hook below makes it true
// at runtime (for children too, e.g. the handlers' `ctx.logger`).
declare module "pino" {
  interface LogFn {
    // biome-ignore lint/style/useShorthandFunctionType: an overload merges into pino's interface; a type alias cannot
    (msg: string, fields: Record<string, unknown>): void;
  }
}

/**
 * Field paths censored in every log line, wherever a caller puts them: credentials, and job
 * payloads (a producer's data, never the operator's business in a log).
 */
const REDACTED_LOG_PATHS = [
  "password",
  "*.password",
  "secret",
  "*.secret",
  "token",
  "*.token",
  "apiKey",
  "*.apiKey",
  "authorization",
  "*.authorization",
  "cookie",
  "*.cookie",
  "headers.authorization",
  "headers.cookie",
  "*.headers.authorization",
  "*.headers.cookie",
  "payload",
  "*.payload",
];

export type CreateLoggerOptions = {
  /** pino's `name` field: which process wrote the line (porter-worker, porter-console). */
  name: string;
  level?: string;
  destination?: pino.DestinationStream;
};

const safeErr = (value: unknown): unknown => (isSafeError(value) ? value : serializeError(value));

/**
 * The pino logger of every Porter process (workers, console, CLI), so all share one error
 * serializer and one redaction: an error logged under any key keeps its kind (type, message,
 * SQLSTATE, constraint, stack, cause chain) but never PostgreSQL's `detail`/`where`/`hint`/
 * `internalQuery` or a data exception's quoted value (see safe-error.ts); the fields of
 * `REDACTED_LOG_PATHS` read "[redacted]". `(message, fields)` calls are swapped into pino's
 * native (fields, message) order.
 */
export const createLogger = (options: CreateLoggerOptions): Logger =>
  pino(
    {
      name: options.name,
      level: options.level ?? "info",
      serializers: { err: safeErr, error: safeErr },
      redact: { paths: REDACTED_LOG_PATHS, censor: "[redacted]" },
      formatters: { log: (object) => scrubErrors(object) as Record<string, unknown> },
      hooks: {
        logMethod(args, method) {
          const [first, second, ...rest] = args as unknown[];
          if (typeof first === "string" && typeof second === "object" && second !== null) {
            return method.apply(this, [second, first, ...rest] as unknown as Parameters<typeof method>);
          }
          // pino's `logger.error(err)` would make the raw message the line's `msg`.
          if (first instanceof Error && typeof second !== "string") {
            return method.apply(this, [first, safeErrorMessage(first), ...rest] as unknown as Parameters<typeof method>);
          }
          return method.apply(this, args);
        },
      },
    },
    options.destination,
  );
