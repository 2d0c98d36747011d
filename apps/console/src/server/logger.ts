import pino, { type Logger } from "pino";
import { getEnv } from "./env";

// House style is message first, fields after: `logger.warn("database down", { err })`.
declare module "pino" {
  interface LogFn {
    (msg: string, fields: Record<string, unknown>): void;
  }
}

let logger: Logger | undefined;

/** The console's pino logger (one per process); `(message, fields)` calls are swapped for pino. */
export const getLogger = (): Logger =>
  (logger ??= pino({
    name: "porter-console",
    level: getEnv().LOG_LEVEL,
    hooks: {
      logMethod(args, method) {
        const [first, second, ...rest] = args as unknown[];
        if (typeof first === "string" && typeof second === "object" && second !== null) {
          return method.apply(this, [second, first, ...rest] as unknown as Parameters<typeof method>);
        }
        return method.apply(this, args);
      },
    },
  }));
