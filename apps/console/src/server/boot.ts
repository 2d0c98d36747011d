import { inspectConnectionRole, privilegeWarning, runtimeLoginHint } from "@porter/db/runtime-role";
import { getPool } from "./db";
import { getEnv } from "./env";
import { getLogger } from "./logger";

/**
 * Validates the environment when the server starts: a bad value stops the process with a clear
 * message instead of failing every request (Next would otherwise keep serving errors). Then,
 * without holding the start up, warns once when the database connection is a superuser's or the
 * tables' owner's rather than the runtime role's.
 */
export const boot = (): void => {
  try {
    getEnv();
  } catch (error) {
    process.stderr.write(`porter console: ${(error as Error).message}\n`);
    process.exit(1);
  }
  void checkDatabaseRole();
};

const checkDatabaseRole = async (): Promise<void> => {
  try {
    const warning = privilegeWarning(await inspectConnectionRole(getPool()));
    if (warning) getLogger().warn(warning);
  } catch (error) {
    // The database may be down at boot: /api/health reports that; only a failed login is worth a hint here.
    const hint = runtimeLoginHint(error);
    if (hint) getLogger().warn(hint, { err: (error as Error).message });
  }
};
