import { getEnv } from "./env";

/**
 * Validates the environment when the server starts: a bad value stops the process with a clear
 * message instead of failing every request (Next would otherwise keep serving errors).
 */
export const boot = (): void => {
  try {
    getEnv();
  } catch (error) {
    process.stderr.write(`porter console: ${(error as Error).message}\n`);
    process.exit(1);
  }
};
