// Playwright's webServer: a fresh `porter_e2e` database, then the `npm start` launcher on it
// (migrate, seed the demo configuration, build the console if needed, console + one worker per
// pool). SIGTERM from Playwright is forwarded, so the launcher drains and stops its children.
// DATABASE_URL is the owner's (migrations); the launcher runs the seed, console and workers as the
// runtime role porter_app, so e2e exercises the least-privilege grants end to end.
import { spawn } from "node:child_process";
import pg from "pg";
import { E2E_DATABASE, e2eAdminUrl, e2eDatabaseUrl } from "./env";

const admin = new pg.Client({ connectionString: e2eAdminUrl() });
await admin.connect();
await admin.query(`DROP DATABASE IF EXISTS ${E2E_DATABASE} WITH (FORCE)`);
await admin.query(`CREATE DATABASE ${E2E_DATABASE}`);
await admin.end();

const child = spawn("npx", ["tsx", "apps/worker/src/bin/start.ts"], {
  stdio: "inherit",
  env: { ...process.env, DATABASE_URL: e2eDatabaseUrl(), PORTER_ADMIN_PASSWORD: "e2e-admin-password" },
});
for (const signal of ["SIGTERM", "SIGINT"] as const) process.on(signal, () => child.kill(signal));
child.on("exit", (code) => process.exit(code ?? 1));
