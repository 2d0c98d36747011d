import { randomBytes } from "node:crypto";
import { chmod, mkdir, readFile, writeFile } from "node:fs/promises";
import { dirname } from "node:path";

/**
 * The console's AUTH_SECRET: the environment's when set; otherwise the one kept in `path`
 * (`.porter/auth-secret`), generated (256 random bits, mode 0600) on first use so sessions
 * survive restarts.
 */
export const ensureAuthSecret = async (fromEnv: string | undefined, path: string): Promise<{ secret: string; source: "env" | "file" | "generated" }> => {
  if (fromEnv) return { secret: fromEnv, source: "env" };
  try {
    const saved = (await readFile(path, "utf8")).trim();
    if (saved.length >= 32) return { secret: saved, source: "file" };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
  const secret = randomBytes(32).toString("base64url");
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, `${secret}\n`, { mode: 0o600 });
  await chmod(path, 0o600);
  return { secret, source: "generated" };
};
