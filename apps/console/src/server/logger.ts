import { createLogger, type Logger } from "@porter/db/logger";
import { getEnv } from "./env";

let logger: Logger | undefined;

/**
 * The console's pino logger (one per process): Porter's one logger setup (@porter/db/logger —
 * message first, fields after; errors without the data they failed on; credentials and payloads
 * redacted).
 */
export const getLogger = (): Logger => (logger ??= createLogger({ name: "porter-console", level: getEnv().LOG_LEVEL }));
