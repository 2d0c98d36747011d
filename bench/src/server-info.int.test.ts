import { useTestDatabase } from "@porter/db/testing/test-database";
import { describe, expect, it } from "vitest";
import { BENCH_SETTINGS, readServerInfo } from "./database";

const testDb = useTestDatabase();

describe("the server settings the bench prints", () => {
  it("names each setting in order with the value in force, and the version apart", async () => {
    const client = await testDb.pool.connect();
    try {
      // A session value the server does not have by default: what is printed is what is in force.
      await client.query("SET synchronous_commit = off");
      const info = await readServerInfo(client);
      expect(info.version).toMatch(/^\d+\.\d+/);
      expect(info.settings).toContain("synchronous_commit off");
      const positions = BENCH_SETTINGS.map((name) => info.settings.indexOf(`${name} `));
      expect(positions.every((p, i) => p >= 0 && (i === 0 || p > positions[i - 1]!))).toBe(true);
      expect(info.settings.startsWith("autovacuum ")).toBe(true);
    } finally {
      await client.query("RESET ALL");
      client.release();
    }
  });
});
