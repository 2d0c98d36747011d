import type { Logger } from "../logger";
import { isConnectionError } from "./errors";
import { jitter, sleep } from "./waker";

/**
 * Runs `fn` until it does not fail with a connection error (PostgreSQL restarting: 57P03, refused,
 * terminated), with capped backoff and a log line per failure, for at most `timeoutMs`.
 */
export const untilReachable = async <T>(fn: () => Promise<T>, logger: Logger, what: string, timeoutMs: number): Promise<T> => {
  const deadline = Date.now() + timeoutMs;
  for (let failures = 1; ; failures++) {
    try {
      return await fn();
    } catch (error) {
      if (!isConnectionError(error) || Date.now() >= deadline) throw error;
      const retryInMs = jitter(Math.min(250 * 2 ** failures, 5000));
      logger.warn(`database not reachable (${what}); retrying`, { err: error, retryInMs });
      await sleep(retryInMs);
    }
  }
};
