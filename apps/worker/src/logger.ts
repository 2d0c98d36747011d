import { createLogger as createPorterLogger, type Logger } from "@porter/db/logger";
import type pino from "pino";

export type { Logger };

/**
 * The worker's pino logger: Porter's one logger setup (@porter/db/logger — message first,
 * fields after; errors without the data they failed on; credentials and payloads redacted).
 */
export const createLogger = (options: { level?: string; name?: string; destination?: pino.DestinationStream } = {}): Logger =>
  createPorterLogger({ name: options.name ?? "porter-worker", level: options.level, destination: options.destination });
