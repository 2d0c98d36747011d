// Playwright's webServer: a fresh `porter_e2e` database, then the `npm start` launcher on it
// (migrate, seed the demo configuration, build the console if needed, console + one worker per
// pool), run as its bin entry (porter-start.mjs: one process, so signals reach it). SIGTERM from
// Playwright is forwarded, so the launcher drains and stops its children. Everything the stack
// prints is also written to e2eStackLogPath(), which logs-carry-no-secrets.spec.ts greps.
// DATABASE_URL is the owner's (migrations); the launcher runs the seed, console and workers as the
// runtime role porter_app, so e2e exercises the least-privilege grants end to end.
import { spawn } from "node:child_process";
import { createWriteStream, mkdirSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { writeSelfSignedCert } from "@porter/core/testing/self-signed-cert";
import pg from "pg";
import { credentialsPath, E2E_DATABASE, e2eAdminUrl, e2eDatabaseUrl, e2eStackLogPath, e2eWebhookCertDir } from "./env";

const admin = new pg.Client({ connectionString: e2eAdminUrl() });
await admin.connect();
await admin.query(`DROP DATABASE IF EXISTS ${E2E_DATABASE} WITH (FORCE)`);
await admin.query(`CREATE DATABASE ${E2E_DATABASE}`);
await admin.end();

mkdirSync(dirname(e2eStackLogPath()), { recursive: true });
// The seed of the fresh database creates a producer key: the file that holds it must be this run's.
rmSync(credentialsPath(), { force: true });
// The webhook receiver's certificate (tenant-webhooks.spec.ts), trusted by this stack's workers.
const certDir = e2eWebhookCertDir();
rmSync(certDir, { recursive: true, force: true });
writeSelfSignedCert(certDir);
const log = createWriteStream(e2eStackLogPath(), { flags: "w", mode: 0o600 });
const child = spawn(process.execPath, ["apps/porter/src/bin/porter-start.mjs"], {
  stdio: ["inherit", "pipe", "pipe"],
  env: {
    ...process.env,
    DATABASE_URL: e2eDatabaseUrl(),
    PORTER_ADMIN_PASSWORD: "e2e-admin-password",
    PORTER_WEBHOOK_CA_FILE: process.env.PORTER_WEBHOOK_CA_FILE ?? join(certDir, "cert.pem"),
    // No worker metrics ports (npm start's default 9464 up): e2e stacks may run side by side.
    PORTER_WORKER_METRICS_PORT: process.env.PORTER_WORKER_METRICS_PORT ?? "off",
  },
});
child.stdout.on("data", (chunk: Buffer) => {
  log.write(chunk);
  process.stdout.write(chunk);
});
child.stderr.on("data", (chunk: Buffer) => {
  log.write(chunk);
  process.stderr.write(chunk);
});
for (const signal of ["SIGTERM", "SIGINT"] as const) process.on(signal, () => child.kill(signal));
child.on("exit", (code) => log.end(() => process.exit(code ?? 1)));
