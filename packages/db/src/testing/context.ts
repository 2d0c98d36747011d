// What global-setup.ts hands to test files through vitest's provide/inject.
export const DEFAULT_TEST_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/postgres";

declare module "vitest" {
  // vitest's ProvidedContext is an interface: augmentation needs one (STYLE's "type over
  // interface" cannot apply here).
  export interface ProvidedContext {
    /** Admin connection string of the test server (may CREATE/DROP DATABASE). */
    porterTestAdminUrl: string;
    /** Name of the migrated template database of this run. */
    porterTestTemplate: string;
  }
}

/** `connectionString` with its database replaced by `database`. */
export function withDatabase(connectionString: string, database: string): string {
  const url = new URL(connectionString);
  url.pathname = `/${encodeURIComponent(database)}`;
  return url.toString();
}
