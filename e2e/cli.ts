import { execFileSync } from "node:child_process";
import { e2eDatabaseUrl } from "./env";

/** Runs `npm run porter -- <args> --json` against the e2e database; returns its last JSON line. */
export const porterCli = <T>(...args: string[]): T => {
  const out = execFileSync("npx", ["tsx", "apps/porter/src/bin/porter.ts", ...args, "--json"], {
    env: { ...process.env, DATABASE_URL: e2eDatabaseUrl() },
    encoding: "utf8",
  });
  const last = out.trim().split("\n").at(-1) ?? "";
  return JSON.parse(last) as T;
};
