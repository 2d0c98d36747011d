import { defineConfig } from "@playwright/test";
import { chromiumPath } from "./e2e/global-setup";

// E2E runs against the built console and real workers on a database of its own (`porter_e2e` on
// the server of PORTER_E2E_ADMIN_URL, default the local PostgreSQL), started by e2e/serve.ts
// through the same launcher as `npm start`. The browser is Debian's chromium (or PORTER_CHROMIUM):
// Playwright cannot download its own here; e2e/global-setup.ts installs it when it can, or names
// the command that does.
const CHROMIUM = chromiumPath();
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
  globalSetup: "./e2e/global-setup.ts",
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
