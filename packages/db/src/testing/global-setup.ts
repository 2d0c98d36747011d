import { randomBytes } from "node:crypto";
import pg from "pg";
import type { TestProject } from "vitest/node";
import { migrate } from "../migrator";
import { DEFAULT_TEST_DATABASE_URL, withDatabase } from "./context";

/**
 * vitest globalSetup of the `integration` project: creates a fresh database
 * `porter_tpl_<random>` on the server of `DATABASE_URL` (default
 * postgres://postgres@127.0.0.1:5432/postgres), applies every migration to it, and provides its
 * name to test files (`inject("porterTestTemplate")`), which clone it with `createTestDatabase`.
 * The template is dropped when the run ends.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const adminUrl = process.env.DATABASE_URL || DEFAULT_TEST_DATABASE_URL;
  const template = `porter_tpl_${randomBytes(6).toString("hex")}`;
  await adminQuery(adminUrl, (client) => client.query(`CREATE DATABASE ${client.escapeIdentifier(template)}`));
  try {
    await migrate(withDatabase(adminUrl, template));
  } catch (error) {
    await dropDatabase(adminUrl, template);
    throw error;
  }
  project.provide("porterTestAdminUrl", adminUrl);
  project.provide("porterTestTemplate", template);
  return () => dropDatabase(adminUrl, template);
}

async function dropDatabase(adminUrl: string, name: string): Promise<void> {
  await adminQuery(adminUrl, (client) => client.query(`DROP DATABASE IF EXISTS ${client.escapeIdentifier(name)} WITH (FORCE)`));
}

async function adminQuery(adminUrl: string, fn: (client: pg.Client) => Promise<unknown>): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl, application_name: "porter-test-setup" });
  try {
    await client.connect();
  } catch (error) {
    const where = new URL(adminUrl);
    throw new Error(
      `integration tests need PostgreSQL at ${where.host} (DATABASE_URL, default `
        + `${DEFAULT_TEST_DATABASE_URL}): ${(error as Error).message}. Start it, e.g. `
        + `pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start`,
      { cause: error },
    );
  }
  try {
    await fn(client);
  } finally {
    await client.end();
  }
}
