import pino, { type Logger } from "pino";

export type { Logger };

// House style is message first, fields after. pino's types only know (fields, message) and printf
// arguments, so this adds the (message, fields) overload; `createLogger`'s hook makes it true at
// runtime (for the handlers' `ctx.logger` too, a child of this logger).
declare module "pino" {
  interface LogFn {
    (msg: string, fields: Record<string, unknown>): void;
  }
}

/**
 * The worker's pino logger. House style is message first, fields after —
 * `logger.info("claimed jobs", { n })` — so a `logMethod` hook swaps such calls into pino's
 * native (fields, message) order; pino's own forms keep working.
 */
export const createLogger = (options: { level?: string; name?: string; destination?: pino.DestinationStream } = {}): Logger =>
  pino(
    {
      name: options.name ?? "porter-worker",
      level: options.level ?? "info",
      hooks: {
        logMethod(args, method) {
          const [first, second, ...rest] = args as unknown[];
          if (typeof first === "string" && typeof second === "object" && second !== null) {
            return method.apply(this, [second, first, ...rest] as unknown as Parameters<typeof method>);
          }
          return method.apply(this, args);
        },
      },
    },
    options.destination,
  );
