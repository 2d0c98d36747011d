import { spawn } from "node:child_process";
import { join } from "node:path";
import { repoRoot } from "./paths";

/** What one `porter` subprocess did. */
export type PorterRun = { code: number | null; stdout: string; stderr: string; json: unknown };

/**
 * Runs the CLI as a real subprocess (`node --import tsx apps/porter/src/bin/porter.ts …`), for
 * tests and scripts. `json` is the last stdout line parsed, when it is JSON.
 */
export const runPorter = (args: string[], options: { env?: NodeJS.ProcessEnv; onStderr?: (chunk: string) => void } = {}): Promise<PorterRun> =>
  new Promise((resolve, reject) => {
    const root = repoRoot();
    const child = spawn(process.execPath, ["--import", "tsx", join(root, "apps/porter/src/bin/porter.ts"), ...args], {
      cwd: root,
      env: options.env ?? process.env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
      stderr += chunk;
      options.onStderr?.(chunk);
    });
    child.on("error", reject);
    child.on("close", (code) => {
      const last = stdout.trimEnd().split("\n").pop() ?? "";
      let json: unknown;
      try {
        json = JSON.parse(last);
      } catch {
        json = undefined;
      }
      resolve({ code, stdout, stderr, json });
    });
  });
