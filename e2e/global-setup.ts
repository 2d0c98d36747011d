import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { pathToFileURL } from "node:url";

/**
 * The e2e suite's browser: Debian's chromium at /usr/bin/chromium (Playwright cannot download its
 * own here), or the binary PORTER_CHROMIUM names. When the default is missing and this process is
 * root with apt-get, it installs Debian's chromium (progress on the terminal); otherwise it fails
 * with the one command that fixes it. Runs before `playwright test` (`npm run test:e2e`, so a
 * missing browser stops the run before the console is built) and as Playwright's globalSetup (for
 * a bare `npx playwright test`).
 */
export const DEFAULT_CHROMIUM = "/usr/bin/chromium";
export const chromiumPath = (): string => process.env.PORTER_CHROMIUM || DEFAULT_CHROMIUM;

const APT_GET = "/usr/bin/apt-get";
const INSTALL = "apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium";

/** What to do about the browser at `path`: nothing, install Debian's chromium, or stop with a fix. */
export const browserPlan = (
  path: string,
  machine: { exists: (p: string) => boolean; root: boolean; apt: boolean },
): { kind: "ready" } | { kind: "install"; command: string } | { kind: "fail"; message: string } => {
  if (machine.exists(path)) return { kind: "ready" };
  if (path !== DEFAULT_CHROMIUM) {
    return {
      kind: "fail",
      message: `no browser at PORTER_CHROMIUM=${path}. Fix: point PORTER_CHROMIUM at a Chromium binary, or unset it to use ${DEFAULT_CHROMIUM}`,
    };
  }
  if (machine.apt && machine.root) return { kind: "install", command: INSTALL };
  const fix = machine.apt ? `sudo sh -c '${INSTALL}'` : "PORTER_CHROMIUM=/path/to/chromium npm test";
  return { kind: "fail", message: `no browser at ${DEFAULT_CHROMIUM}. Fix: ${fix}` };
};

export default function ensureChromium(): void {
  const path = chromiumPath();
  const plan = browserPlan(path, { exists: existsSync, root: process.getuid?.() === 0, apt: existsSync(APT_GET) });
  if (plan.kind === "ready") return;
  if (plan.kind === "fail") throw new Error(plan.message);
  process.stderr.write(`\n==> e2e: no browser at ${path}; installing Debian's chromium (${plan.command})\n`);
  const run = spawnSync("sh", ["-c", plan.command], { stdio: ["ignore", "inherit", "inherit"] });
  if (run.status !== 0 || !existsSync(path)) {
    throw new Error(`installing chromium failed (exit ${run.status ?? run.signal}); run it by hand: ${plan.command}`);
  }
  process.stderr.write(`==> e2e: chromium installed at ${path}\n\n`);
}

// `tsx e2e/global-setup.ts` (the first step of `npm run test:e2e`).
if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  try {
    ensureChromium();
  } catch (error) {
    process.stderr.write(`e2e: ${(error as Error).message}\n`);
    process.exit(1);
  }
}
