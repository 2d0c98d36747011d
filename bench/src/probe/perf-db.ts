// Shared by the probes: a fresh, migrated `porter_perf` database with one pool, queue, job type
// and tenant (all named "bench"), and an optional CPU profile of a measured stretch.
import { writeFileSync } from "node:fs";
import { Session } from "node:inspector/promises";
import { type EnqueueInput, enqueueJobs, type PolicyCache } from "@porter/core";
import { migrate } from "@porter/db/migrator";
import { createPool } from "@porter/db/pool";
import pg from "pg";

/** PERF_SERVER=postgres://user@host:port (default the shared :5432): e.g. a cluster of one's own for WAL reads. */
const SERVER = process.env.PERF_SERVER ?? "postgres://postgres@127.0.0.1:5432";
export const PERF_URL = `${SERVER}/porter_perf`;
const ADMIN_URL = `${SERVER}/postgres`;

/** `postgres://…/<name>` on the probes' server (PERF_SERVER). */
export const probeUrl = (name: string): string => `${SERVER}/${name}`;

/**
 * Drops and recreates database `name` on the probes' server, migrates it and seeds the "bench"
 * control plane (pool, queue, job type `bench.job`, tenant); returns a pool on it.
 */
export const freshProbeDatabase = async (
  name: string,
  options: { connections: number; workerConcurrency?: number; statements?: boolean; applicationName?: string },
): Promise<pg.Pool> => {
  const admin = new pg.Client(ADMIN_URL);
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await admin.query(`CREATE DATABASE ${name}`);
  if (options.statements) await admin.query(`ALTER DATABASE ${name} SET pg_stat_statements.track = 'all'`);
  await admin.end();
  const url = probeUrl(name);
  await migrate(url);
  const pool = createPool(url, { max: options.connections, applicationName: options.applicationName });
  if (options.statements) await pool.query(`CREATE EXTENSION IF NOT EXISTS pg_stat_statements`);
  await pool.query(`INSERT INTO pools (id, worker_concurrency) VALUES ('bench', $1)`, [options.workerConcurrency ?? 10]);
  await pool.query(`INSERT INTO queues (id, pool_id) VALUES ('bench', 'bench')`);
  await pool.query(`INSERT INTO job_types (id, queue_id) VALUES ('bench.job', 'bench')`);
  await pool.query(`INSERT INTO tenants (id) VALUES ('bench')`);
  return pool;
};

/** Drops and recreates `porter_perf`, migrates it and seeds the "bench" control plane. */
export const freshPerfDatabase = (options: { connections: number; workerConcurrency?: number; statements?: boolean }) =>
  freshProbeDatabase("porter_perf", options);

/** With PROFILE=<file>: starts V8's CPU profiler; `stop()` writes the profile there. */
export const startProfile = async () => {
  const file = process.env.PROFILE;
  // HEAP_PROFILE=file: sampled allocations (those the young and old collections took included),
  // as a .heapprofile for Chrome's DevTools, in place of the CPU profile.
  const heapFile = process.env.HEAP_PROFILE;
  if (heapFile) {
    const session = new Session();
    session.connect();
    await session.post("HeapProfiler.enable");
    await session.post("HeapProfiler.startSampling", {
      samplingInterval: 4096,
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC: true,
    } as never);
    return {
      stop: async () => {
        const { profile } = await session.post("HeapProfiler.stopSampling");
        writeFileSync(heapFile, JSON.stringify(profile));
      },
    };
  }
  if (!file) return { stop: async () => {} };
  const session = new Session();
  session.connect();
  await session.post("Profiler.enable");
  await session.post("Profiler.start");
  return {
    stop: async () => {
      const { profile } = await session.post("Profiler.stop");
      writeFileSync(file, JSON.stringify(profile));
    },
  };
};

/**
 * Makes `calls` enqueue calls through `v`: with `batch` > 0 as sequential batches of that size,
 * else `concurrency` callers each awaiting its call before the next.
 */
export const driveCalls = async (
  v: { one: () => Promise<unknown>; many: (n: number) => Promise<unknown> },
  calls: number,
  concurrency: number,
  batch: number,
): Promise<void> => {
  if (batch > 0) {
    for (let done = 0; done < calls; done += batch) await v.many(batch);
    return;
  }
  let left = calls;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (left-- > 0) await v.one();
    }),
  );
};

/** The direct variant of the producer probes: core's `enqueueJobs` in this process, for tenant "bench". */
export const directVariant = (pool: pg.Pool, job: () => Omit<EnqueueInput, "tenant_id">, policyCache: PolicyCache) => ({
  one: () => enqueueJobs(pool, [{ ...job(), tenant_id: "bench" }], { policyCache }),
  many: (n: number) =>
    enqueueJobs(
      pool,
      Array.from({ length: n }, () => ({ ...job(), tenant_id: "bench" })),
      { policyCache },
    ),
});
