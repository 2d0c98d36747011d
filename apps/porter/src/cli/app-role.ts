import { randomBytes } from "node:crypto";
import { chmod, mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { passwordOf, type RuntimeRoleSpec, runtimeDatabaseUrl, runtimeRoleName } from "@porter/db/runtime-role";
import type { CliEnv } from "./env";

/** The generated runtime-role password of `npm start` and the embedded database (mode 0600). */
export const appPasswordPath = (home: string): string => join(home, "app-password");

/**
 * The runtime role's password. With `PORTER_APP_DATABASE_URL`, the one in that URL (or none: the
 * URL is used as it is, and nothing is generated). Otherwise `PORTER_APP_PASSWORD`; else the one
 * kept in `.porter/app-password`; else, when `generate` (the embedded database, `npm start`), a
 * new random one written there (mode 0600); else none (a server that trusts local connections, or
 * a role whose password an administrator manages).
 */
export const resolveAppPassword = async (env: CliEnv, options: { home: string; generate: boolean }): Promise<string | undefined> => {
  if (env.PORTER_APP_DATABASE_URL) return passwordOf(env.PORTER_APP_DATABASE_URL);
  if (env.PORTER_APP_PASSWORD) return env.PORTER_APP_PASSWORD;
  const path = appPasswordPath(options.home);
  try {
    const saved = (await readFile(path, "utf8")).trim();
    if (saved) return saved;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
  if (!options.generate) return undefined;
  const password = randomBytes(24).toString("base64url");
  await mkdir(options.home, { recursive: true });
  await writeFile(path, `${password}\n`, { mode: 0o600 });
  await chmod(path, 0o600);
  return password;
};

/** The role the migrator creates and grants, and the URL the console, workers and CLI connect with. */
export type AppRole = { spec: RuntimeRoleSpec; connectionString: string };

/** The runtime role for the owner's connection string `ownerUrl` (README "Configuration"). */
export const appRoleFor = (env: CliEnv, ownerUrl: string, password: string | undefined): AppRole => ({
  spec: { name: runtimeRoleName(env.PORTER_APP_DATABASE_URL), ...(password ? { password } : {}) },
  connectionString: runtimeDatabaseUrl({ databaseUrl: ownerUrl, appDatabaseUrl: env.PORTER_APP_DATABASE_URL, appPassword: password }),
});
