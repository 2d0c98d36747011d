import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import pg from "pg";

/**
 * Every node-postgres `Client` class a worker process may use: the bench's own, and the peers'
 * (graphile-worker and pg-boss load node-postgres from bench/.peers, a module of its own: patching
 * only the bench's left their statements untimed — (c) and (f) printed "0 claims" for them).
 */
export const pgClientClasses = (): Array<typeof pg.Client> => {
  const peers = new URL("../../.peers/node_modules/pg/package.json", import.meta.url);
  return existsSync(peers) ? [pg.Client, (createRequire(peers)("pg") as typeof pg).Client] : [pg.Client];
};
