import { useTestDatabase } from "@porter/db/testing/test-database";
import { describe, expect, it } from "vitest";
import { BENCH_SETTINGS, readServerInfo } from "./database";

const testDb = useTestDatabase();

describe("the server settings the bench prints", () => {
  it("names each setting with the server's value, in order, and the version apart", async () => {
    const client = await testDb.pool.connect();
    try {
      const info = await readServerInfo(client);
      const show = async (name: string) => (await client.query<{ v: string }>(`SELECT current_setting($1) AS v`, [name])).rows[0]!.v;
      expect(info.version).toBe(await show("server_version"));
      const expected = [];
      for (const name of BENCH_SETTINGS) {
        const value = await show(name);
        expected.push(`${name} ${value === "" ? "''" : value}`);
      }
      expect(info.settings).toBe(expected.join(", "));
      expect(info.settings.startsWith(`autovacuum ${await show("autovacuum")},`)).toBe(true);
    } finally {
      client.release();
    }
  });
});
