import { chmod, mkdir, writeFile } from "node:fs/promises";
import { dirname, relative } from "node:path";

/** Where `npm start` leaves one-time credentials when its output is not a terminal. */
export const CREDENTIALS_FILE_NAME = "credentials.txt";

/**
 * The banner lines for one-time credentials (a generated admin password, a new producer key).
 * On a terminal: the lines themselves, shown once. Otherwise (output redirected to a file, a
 * journal, a CI log, a supervisor's pipe) they never reach that output: they are written to
 * `path` (mode 0600, replacing an older file) and the banner says where.
 */
export const presentCredentials = async (options: { lines: string[]; isTty: boolean; path: string; cwd?: string; now?: Date }): Promise<string[]> => {
  if (options.lines.length === 0) return [];
  if (options.isTty) return options.lines;
  const body = [
    `# Porter one-time credentials, created ${(options.now ?? new Date()).toISOString()}.`,
    "# Shown nowhere else: keep them somewhere safe, then delete this file.",
    ...options.lines.map((line) => line.trim()),
    "",
  ].join("\n");
  await mkdir(dirname(options.path), { recursive: true, mode: 0o700 });
  await writeFile(options.path, body, { mode: 0o600 });
  await chmod(options.path, 0o600); // an older file keeps its mode through writeFile
  const shown = relative(options.cwd ?? process.cwd(), options.path) || options.path;
  return [`  credentials:  written to ${shown} (mode 0600): output is not a terminal, so they are not printed`];
};
