import { existsSync } from "node:fs";
import { defineConfig } from "@playwright/test";

// E2E runs against the built console and real workers on a database of its own (`porter_e2e` on
// the server of PORTER_E2E_ADMIN_URL, default the local PostgreSQL), started by e2e/serve.ts
// through the same launcher as `npm start`. The browser is Debian's chromium: Playwright cannot
// download its own here.
const CHROMIUM = process.env.PORTER_CHROMIUM ?? "/usr/bin/chromium";
if (!existsSync(CHROMIUM)) {
  const hint = "install Debian's chromium (apt-get update && apt-get install -y chromium) or point PORTER_CHROMIUM at a Chromium binary";
  throw new Error(`no browser at ${CHROMIUM}: ${hint}`);
}
const PORT = Number(process.env.PORTER_E2E_PORT ?? 3199);

export default defineConfig({
  testDir: "e2e",
  testMatch: "**/*.spec.ts",
  fullyParallel: false,
  workers: 1,
  forbidOnly: true,
  retries: 0,
  timeout: 60_000,
  reporter: [["list"]],
  outputDir: "test-results",
  use: {
    baseURL: `http://127.0.0.1:${PORT}`,
    viewport: { width: 1280, height: 800 },
    launchOptions: {
      executablePath: CHROMIUM,
      args: [
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--disable-quic",
      ],
    },
  },
  webServer: {
    command: "npx tsx e2e/serve.ts",
    url: `http://127.0.0.1:${PORT}/api/health`,
    env: { PORT: String(PORT) },
    timeout: 300_000,
    reuseExistingServer: false,
    stdout: "pipe",
    stderr: "pipe",
    gracefulShutdown: { signal: "SIGTERM", timeout: 20_000 },
  },
});
