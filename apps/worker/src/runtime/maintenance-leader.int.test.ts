import { randomUUID } from "node:crypto";
import { Writable } from "node:stream";
import { claimJobs, createRedrive, enqueueJobs, getRedrive, registerWorker } from "@porter/core";
import { controlPlane } from "@porter/core/testing/control-plane-factory";
import { killJobs } from "@porter/core/testing/dead-jobs";
import { stateOf } from "@porter/core/testing/fixtures";
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

describe("maintenance leader's housekeeping", () => {
  it("runs it every housekeepingEveryMs while it finds nothing, and rescues an expired lease on every tick meanwhile", async () => {
    await controlPlane(testDb.pool, { pool: "hk-pool", queues: [{ id: "hk-q" }] });
    // A worker row a day past its heartbeat is pruned by housekeeping (pruneWorkers).
    const staleWorker = async (id: string) => {
      await registerWorker(testDb.pool, { id, poolId: "hk-pool", host: "h", pid: 1, version: "t", concurrency: 1 });
      await testDb.pool.query(`UPDATE workers SET heartbeat_at = now() - interval '2 days', stopped_at = now() - interval '2 days' WHERE id = $1`, [id]);
    };
    const exists = async (id: string) => (await testDb.pool.query(`SELECT 1 FROM workers WHERE id = $1`, [id])).rowCount === 1;
    const first = randomUUID();
    const second = randomUUID();
    await staleWorker(first);
    const leader = new MaintenanceLeader({
      connectionString: testDb.appConnectionString,
      logger: createLogger({ level: "silent" }),
      acquireEveryMs: 20,
      runEveryMs: 20,
      housekeepingEveryMs: 60_000,
    });
    leader.start();
    try {
      // The first pass runs it; the next finds nothing left (it pruned a row: it ran once more).
      await waitFor("the first stale worker row pruned", async () => !(await exists(first)));
      await new Promise((resolve) => setTimeout(resolve, 300));
      await staleWorker(second);
      // Ticks continue every 20 ms: a lease expired now is rescued by one of them...
      const [jobId] = await enqueueJobs(testDb.pool, [{ job_type: "hk-q.job", tenant_id: "tenant_A", payload: {}, idempotency_key: "hk-1" }]);
      const [claimed] = await claimJobs(testDb.pool, { poolId: "hk-pool", workerId: randomUUID(), limit: 1 });
      expect(claimed?.jobId).toBe(jobId!.job_id);
      await testDb.pool.query(`UPDATE jobs SET lease_until = now() - interval '1 second' WHERE id = $1`, [claimed!.id]);
      await waitFor("the expired lease rescued", async () => (await stateOf(testDb.pool, claimed!.jobId)) !== "RUNNING");
      await new Promise((resolve) => setTimeout(resolve, 300));
      // ...while housekeeping, which found nothing on its last pass, waits its 60 s.
      expect(await exists(second)).toBe(true);
    } finally {
      await leader.close();
    }
  });
});
