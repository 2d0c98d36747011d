import { join } from "node:path";
import { fileURLToPath } from "node:url";

/** The repository root (this file is apps/porter/src/cli/paths.ts). */
export const repoRoot = (): string => fileURLToPath(new URL("../../../../", import.meta.url));

/** Local state of `npm start` and the CLI: the embedded database, the generated AUTH_SECRET. */
export const porterHome = (root = repoRoot()): string => join(root, ".porter");

/** Data directory of the embedded PostgreSQL server. */
export const embeddedDataDir = (root = repoRoot()): string => join(porterHome(root), "pg");
