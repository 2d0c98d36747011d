import { useTestDatabase } from "@porter/db/testing/test-database";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { isAlive } from "./database";
import { pgTicks, postmasterOf } from "./pg-ticks";

const testDb = useTestDatabase();

describe("PostgreSQL's CPU as the bench counts it", () => {
  it("keeps the CPU of a backend that has ended (a worker's pool closes before the second reading)", async () => {
    const postmaster = await postmasterOf(testDb.pool);
    expect(postmaster).toBeGreaterThan(0); // the server runs on this machine: the bench's case
    const before = pgTicks(postmaster);
    const client = new pg.Client({ connectionString: testDb.connectionString });
    await client.connect();
    // ≈ 0.3–1 s of one backend's CPU, then the backend ends with its connection.
    await client.query("SELECT count(*) FROM generate_series(1, 20000000)");
    const pid = (await client.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")).rows[0]!.pid;
    await client.end();
    // Gone from the process list once the postmaster has reaped it.
    await expect.poll(() => isAlive(pid)).toBe(false);
    const usedMs = (pgTicks(postmaster) - before) * 10;
    expect(usedMs).toBeGreaterThanOrEqual(200);
  });
});
