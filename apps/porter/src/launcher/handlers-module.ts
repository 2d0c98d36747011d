// PORTER_HANDLERS: the user's handler module `npm start` gives every worker (`--handlers`).
import { checkOwnHandlers, loadHandlerModule, withOwnHandlers } from "@porter/worker";
import type pg from "pg";

/**
 * Checks PORTER_HANDLERS' module as each worker will (it loads, exports only handlers, no two for
 * one job type nor one for a diag.* type, every type in the registry; each worker runs those of
 * its pool), so a wrong module stops `npm start` at once instead of restarting workers that each
 * refuse it. Returns its job types.
 */
export const checkHandlersModule = async (db: pg.Pool, path: string, pools: readonly string[]): Promise<string[]> => {
  const own = await loadHandlerModule(path).catch((error: Error) => {
    throw new Error(`PORTER_HANDLERS: ${error.message}`);
  });
  try {
    withOwnHandlers(own);
    for (const poolId of pools) await checkOwnHandlers(db, poolId, own, "skip");
  } catch (error) {
    throw new Error(`PORTER_HANDLERS (${path}): ${(error as Error).message}`);
  }
  return own.map((h) => h.type);
};
