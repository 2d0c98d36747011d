import { type ClaimedJob, claimJobs, completeJobs } from "@porter/core";
import { controlPlane } from "@porter/core/testing/control-plane-factory";
import { createPool } from "@porter/db/pool";
import { useTestDatabase } from "@porter/db/testing/test-database";
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { enqueue } from "../testing/fixtures";

const testDb = useTestDatabase();
const JOBS = 10_000;
const CLAIMERS = 8;
let db: pg.Pool;

beforeAll(async () => {
  db = createPool(testDb.appConnectionString, { max: 2 });
  await controlPlane(db, {
    pool: "race",
    queues: [{ id: "race.a" }, { id: "race.b" }],
    jobTypes: [
      { id: "race.a.job", queue: "race.a" },
      { id: "race.b.job", queue: "race.b" },
    ],
    tenants: ["tenant_A", "tenant_B"],
  });
  for (let i = 0; i < JOBS; i += 1000) {
    await enqueue(
      db,
      Array.from({ length: 1000 }, (_, k) => ({
        type: (i + k) % 2 ? "race.a.job" : "race.b.job",
        tenant: (i + k) % 3 ? "tenant_A" : "tenant_B",
        payload: { n: i + k },
        priority: (i + k) % 7,
      })),
    );
  }
}, 120_000);

afterAll(async () => {
  await db.end();
});

describe("claim under contention", () => {
  it(`${CLAIMERS} claimers on ${CLAIMERS} connections claim all ${JOBS} jobs, none twice`, { timeout: 120_000 }, async () => {
    const claimed: Array<{ claimer: number; job: ClaimedJob }> = [];
    const connections = Array.from({ length: CLAIMERS }, () => createPool(testDb.appConnectionString, { max: 1 }));
    try {
      await Promise.all(
        connections.map(async (connection, claimer) => {
          // Claim in batches and ack every other batch, so claims race both READY rows and acks.
          for (let round = 0; ; round++) {
            const batch = await claimJobs(connection, { poolId: "race", workerId: `claimer-${claimer}`, limit: 1 + ((claimer * 7 + round) % 50) });
            if (batch.length === 0) return;
            for (const job of batch) claimed.push({ claimer, job });
            if (round % 2 === 0)
              await completeJobs(
                connection,
                batch.map((j) => ({ id: j.id, leaseToken: j.leaseToken, attempt: j.attempt, result: null })),
              );
          }
        }),
      );
    } finally {
      await Promise.all(connections.map((c) => c.end()));
    }

    const perAttempt = new Set(claimed.map(({ job }) => `${job.jobId}#${job.attempt}`));
    const perJob = new Set(claimed.map(({ job }) => job.jobId));
    expect(claimed).toHaveLength(JOBS);
    expect(perAttempt.size).toBe(JOBS);
    expect(perJob.size).toBe(JOBS);
    expect(claimed.every(({ job }) => job.attempt === 1)).toBe(true);
    // Every claimer took part, and the database agrees: nothing left READY, every job claimed once.
    expect(new Set(claimed.map((c) => c.claimer)).size).toBe(CLAIMERS);
    const { rows } = await db.query<{ ready: number; running: number; succeeded: number; owners: number }>(
      `SELECT (SELECT count(*)::int FROM jobs WHERE state IN ('READY', 'RETRY_WAIT')) AS ready,
              (SELECT count(*)::int FROM jobs WHERE state = 'RUNNING' AND attempt = 1) AS running,
              (SELECT count(*)::int FROM finished_jobs WHERE state = 'SUCCEEDED' AND attempt = 1) AS succeeded,
              (SELECT count(DISTINCT lease_owner)::int FROM jobs) AS owners`,
    );
    expect(rows[0]!.ready).toBe(0);
    expect(rows[0]!.running + rows[0]!.succeeded).toBe(JOBS);
    const ownerOf = new Map(claimed.map(({ claimer, job }) => [job.id, `claimer-${claimer}`]));
    const running = await db.query<{ id: string; lease_owner: string }>(`SELECT id::text, lease_owner FROM jobs`);
    for (const row of running.rows) expect(row.lease_owner).toBe(ownerOf.get(row.id));
  });
});
