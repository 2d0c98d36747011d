import { Writable } from "node:stream";
import { createRedrive, getRedrive } from "@porter/core";
import { controlPlane } from "@porter/core/testing/control-plane-factory";
import { killJobs } from "@porter/core/testing/dead-jobs";
import { useTestDatabase } from "@porter/db/testing/test-database";
import { describe, expect, it } from "vitest";
import { createLogger } from "../logger";
import { waitFor } from "../testing/fixtures";
import { MaintenanceLeader } from "./maintenance-leader";

const testDb = useTestDatabase();

/** Runs a leader with fast timers for a while, once it leads; returns the messages it logged. */
const runLeader = async (connectionString: string) => {
  const lines: Array<{ msg: string }> = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString("utf8").split("\n").filter(Boolean)) lines.push(JSON.parse(line) as { msg: string });
      done();
    },
  });
  const leader = new MaintenanceLeader({ connectionString, logger: createLogger({ destination }), acquireEveryMs: 20, runEveryMs: 20, vacuumEveryMs: 20 });
  leader.start();
  try {
    await waitFor("leadership", () => leader.leading);
    // Many vacuum checks' worth of passes (the first pass also plans the statements on the
    // partitioned finished_jobs: on a loaded machine it alone took most of 600 ms).
    await new Promise((resolve) => setTimeout(resolve, 1500));
  } finally {
    await leader.close();
  }
  return lines.map((l) => l.msg);
};

const OFF = /the leader's vacuum of the hot table is off/;

describe("maintenance leader and the hot table's vacuum", () => {
  it("as the runtime role: says once that its vacuum is off where PostgreSQL has no MAINTAIN (< 17), else says nothing", async () => {
    const version = Number((await testDb.pool.query<{ v: string }>(`SHOW server_version_num`)).rows[0]!.v);
    const messages = await runLeader(testDb.appConnectionString);
    expect(messages).toContain("became the maintenance leader");
    // Every pass (rescue, expire, promote, prune, aging) ran with the runtime role's grants.
    expect(messages).not.toContain("maintenance failed; reconnecting");
    expect(messages.filter((m) => OFF.test(m))).toHaveLength(version >= 170000 ? 0 : 1);
  });

  it("as the owner: may vacuum, says nothing of it", async () => {
    const messages = await runLeader(testDb.connectionString);
    expect(messages).toContain("became the maintenance leader");
    expect(messages.filter((m) => OFF.test(m))).toHaveLength(0);
  });
});

describe("maintenance leader and durable redrives", () => {
  it("advances a running redrive every tick, as the runtime role, to its end", async () => {
    await controlPlane(testDb.pool, { pool: "ml-pool", queues: [{ id: "ml-q" }] });
    const jobs = await killJobs(testDb.pool, 30, { jobType: "ml-q.job" }, "ml-pool");
    const created = await createRedrive(testDb.pool, { selection: { job_ids: jobs }, ratePerS: 100, actor: "test" });
    const leader = new MaintenanceLeader({
      connectionString: testDb.appConnectionString,
      logger: createLogger({ level: "silent" }),
      acquireEveryMs: 20,
      runEveryMs: 20,
    });
    leader.start();
    try {
      await waitFor("the redrive to complete", async () => (await getRedrive(testDb.pool, created.redrive_id))?.status === "completed");
    } finally {
      await leader.close();
    }
    expect(await getRedrive(testDb.pool, created.redrive_id)).toMatchObject({ redriven: 30, total: 30 });
  });
});
