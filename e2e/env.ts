import { fileURLToPath } from "node:url";

/** Where the e2e stack lives; shared by e2e/serve.ts and the specs. */
/** `PORTER_E2E_DATABASE` lets two checkouts run e2e on one server side by side. */
export const E2E_DATABASE = /^[a-z_][a-z0-9_]*$/.test(process.env.PORTER_E2E_DATABASE ?? "") ? process.env.PORTER_E2E_DATABASE! : "porter_e2e";
export const e2eAdminUrl = (): string => process.env.PORTER_E2E_ADMIN_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
export const e2eDatabaseUrl = (): string => {
  const url = new URL(e2eAdminUrl());
  url.pathname = `/${E2E_DATABASE}`;
  return url.toString();
};
/**
 * Every line the e2e stack prints (launcher, console, workers, PostgreSQL's relayed lines):
 * e2e/serve.ts tees its output here, e2e/logs-carry-no-secrets.spec.ts greps it.
 */
export const e2eStackLogPath = (): string => fileURLToPath(new URL(`../.porter/e2e-${E2E_DATABASE}-stack.log`, import.meta.url));
/** Where `npm start` leaves one-time credentials when its output is not a terminal (credentials.ts). */
export const credentialsPath = (): string => fileURLToPath(new URL("../.porter/credentials.txt", import.meta.url));
/**
 * A self-signed certificate for 127.0.0.1 (cert.pem, key.pem) that e2e/serve.ts makes before the
 * stack starts and hands to its workers as PORTER_WEBHOOK_CA_FILE: tenant-webhooks.spec.ts serves
 * its HTTPS receiver with it, so deliveries are verified TLS, as in production.
 */
export const e2eWebhookCertDir = (): string => fileURLToPath(new URL(`../.porter/e2e-${E2E_DATABASE}-webhook-tls`, import.meta.url));
