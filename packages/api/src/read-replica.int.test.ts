import { randomUUID } from "node:crypto";
import { PolicyCache, tenantJob } from "@porter/core";
import { controlPlane } from "@porter/core/testing/control-plane-factory";
import { killJobs } from "@porter/core/testing/dead-jobs";
import { createPool } from "@porter/db/pool";
import { type ControlDb, createPrisma } from "@porter/db/prisma";
import { ReadReplica } from "@porter/db/read-replica";
import { readReplicaUrl, runtimeDatabaseUrl } from "@porter/db/runtime-role";
import { type ReplicaCluster, startStreamingReplica } from "@porter/db/testing/replica-cluster";
import { type RestartableCluster, startRestartableCluster } from "@porter/db/testing/restartable-cluster";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkHealth } from "./health";
import { handleTrpcRequest } from "./http";
import { READ_LSN_COOKIE, type ReplicaReads } from "./reads";
import { enqueueMany, sessionOf } from "./testing/console";

// Replica reads (docs/scaling.md "Replica reads") against a real streaming replica: a primary
// cluster of this file's own and a hot standby made by `pg_basebackup -R`. Replay is paused
// (pg_wal_replay_pause) so rows written meanwhile exist on the primary only: a read that does not
// see them was served by the replica, one that does by the primary. Runs as root (every PostgreSQL
// binary as the `postgres` OS user, as restartable-cluster.ts does) and unprivileged alike.

let primary: RestartableCluster;
let replica: ReplicaCluster;
let owner: pg.Pool; // the primary as the owner: fixtures
let standby: pg.Client; // the replica as a superuser: pause and resume replay, pg_stat_activity
let app: pg.Pool; // the console's pools, as the runtime role
let appReplica: pg.Pool;
let prisma: ControlDb;
let replicaPrisma: ControlDb;
let router: ReadReplica;
let dead: string[];

beforeAll(async () => {
  try {
    primary = await startRestartableCluster({ isMigrated: true });
    owner = createPool(primary.connectionString, { max: 3, applicationName: "porter-test" });
    await controlPlane(owner, { pool: "rr-pool", queues: [{ id: "rr-q", lease_seconds: 30, max_runtime_s: 60 }], tenants: ["rr_t"] });
    dead = await killJobs(owner, 2, { jobType: "rr-q.job", tenantId: "rr_t", code: "UPSTREAM_500" }, "rr-pool");
    replica = await startStreamingReplica(primary);
  } catch (error) {
    throw new Error(
      `could not start a primary and its streaming replica (PostgreSQL binaries in PORTER_PG_BIN or /usr/lib/postgresql/<v>/bin; as root they run as the postgres OS user): ${(error as Error).message}`,
      { cause: error },
    );
  }
  standby = await connectStandby();
  const runtimeUrl = runtimeDatabaseUrl({ databaseUrl: primary.connectionString });
  app = createPool(runtimeUrl, { max: 5, applicationName: "porter-console" });
  appReplica = createPool(readReplicaUrl(replica.connectionString, runtimeUrl), {
    max: 5,
    onError: () => {}, // the replica's stop ends its idle connections
    applicationName: "porter-console-replica",
    connectionTimeoutMillis: 1000,
  });
  prisma = createPrisma(app);
  replicaPrisma = createPrisma(appReplica);
  router = new ReadReplica({ primary: app, replica: appReplica, maxLagS: 60, refreshMs: 50 });
}, 180_000);

afterAll(async () => {
  await standby?.end().catch(() => {});
  await prisma?.$disconnect();
  await replicaPrisma?.$disconnect();
  await app?.end();
  await appReplica?.end();
  await owner?.end();
  await replica?.stop();
  await primary?.stop();
});

/** A superuser's connection to the replica (again after a restart: the server's stop ends it). */
const connectStandby = async (): Promise<pg.Client> => {
  const client = new pg.Client({ connectionString: replica.connectionString, application_name: "porter-test" });
  client.on("error", () => {});
  await client.connect();
  return client;
};

const replicaOf = (r: ReadReplica): ReplicaReads => ({ router: r, prisma: replicaPrisma });

/** The fields of the procedures' results this file reads (each call reads those of its own). */
type Out = {
  job_id: string;
  jobs: Array<{ job_id: string }>;
  redrive_id: string;
  redrives: Array<{ redrive_id: string }>;
  groups: Array<{ id: string; sample_job_id: string; status: string }>;
  status: string;
};

/** One console tRPC call through the HTTP handler as an operator; `cookie` as the browser sends it. */
const call = async (
  path: string,
  input: unknown,
  opts: { cookie?: string; method?: "GET" | "POST"; via?: ReadReplica } = {},
): Promise<{ status: number; data: Out; setCookie: string | null }> => {
  const method = opts.method ?? "GET";
  const url = `http://console.test/api/trpc/${path}${method === "GET" ? `?input=${encodeURIComponent(JSON.stringify(input))}` : ""}`;
  const headers: Record<string, string> = { host: "console.test", origin: "http://console.test", "content-type": "application/json" };
  if (opts.cookie) headers.cookie = opts.cookie;
  const response = await handleTrpcRequest(new Request(url, { method, headers, ...(method === "POST" ? { body: JSON.stringify(input) } : {}) }), {
    db: app,
    prisma,
    policyCache: new PolicyCache(),
    replica: replicaOf(opts.via ?? router),
    getSession: async () => sessionOf("operator"),
  });
  const body = (await response.json()) as { result?: { data: unknown }; error?: unknown };
  return { status: response.status, data: (body.result?.data ?? body.error) as Out, setCookie: response.headers.get("set-cookie") };
};

const listedJobs = async (opts: { cookie?: string; via?: ReadReplica } = {}): Promise<string[]> => {
  const r = await call("jobs.list", { filter: { queue_id: "rr-q" }, limit: 200 }, opts);
  expect(r.status).toBe(200);
  return r.data.jobs.map((j) => j.job_id);
};

/**
 * Until the replica has replayed everything the primary wrote so far (and the router has seen it):
 * a marker row committed on the primary after every earlier write, then read back from the
 * replica. (Waiting for the primary's `pg_current_wal_insert_lsn()` could wait on nothing: right
 * after pg_basebackup's segment switch it points past a page header that no record follows until
 * the server next writes one — a standby snapshot every 15 s when idle — and it timed out at 20 s
 * in a full run.)
 */
const caughtUp = async () => {
  const marker = randomUUID();
  await owner.query(`CREATE TABLE IF NOT EXISTS rr_caught_up (marker text PRIMARY KEY)`);
  await owner.query(`INSERT INTO rr_caught_up (marker) VALUES ($1)`, [marker]);
  for (let i = 0; i < 400; i++) {
    const seen = await standby.query(`SELECT 1 FROM rr_caught_up WHERE marker = $1`, [marker]).then(
      (r) => r.rowCount === 1,
      () => false, // the table's creation not replayed yet
    );
    if (seen) {
      await router.refresh();
      return;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`the replica did not replay the marker ${marker} within 20 s:\n${replica.tailLog(20)}`);
};

const pauseReplay = async () => {
  await standby.query("SELECT pg_wal_replay_pause()");
  for (let i = 0; i < 200; i++) {
    if ((await standby.query("SELECT pg_get_wal_replay_pause_state() AS s")).rows[0].s === "paused") return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error("replay did not pause");
};
const resumeReplay = () => standby.query("SELECT pg_wal_replay_resume()");
const cookieIn = (setCookie: string | null): string => {
  const match = new RegExp(`${READ_LSN_COOKIE}=([^;]+)`).exec(setCookie ?? "");
  if (!match) throw new Error(`no ${READ_LSN_COOKIE} cookie in Set-Cookie: ${setCookie}`);
  return `${READ_LSN_COOKIE}=${match[1]}`;
};

describe("replica reads", () => {
  let fresh: string; // enqueued while replay was paused
  let cookie: string; // the operator's after starting a redrive
  let redriveId: string;

  it("serves the jobs browser from the replica (as the runtime role): a job enqueued while replay is paused is not listed", async () => {
    await caughtUp();
    await pauseReplay();
    fresh = (await enqueueMany(owner, 1, { jobType: "rr-q.job", tenantId: "rr_t", key: "fresh" }))[0]!;
    expect((await owner.query("SELECT 1 FROM jobs WHERE job_id = $1", [fresh])).rowCount).toBe(1);
    const listed = await listedJobs();
    expect(listed).toEqual(expect.arrayContaining(dead));
    expect(listed).not.toContain(fresh);
    const { rows } = await standby.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'porter-console-replica' AND usename = 'porter_app'`,
    );
    expect(rows[0]!.n).toBeGreaterThan(0);
  });

  it("a job just enqueued: its page (jobs.get, the status page's job) falls back to the primary when the replica has not replayed it", async () => {
    expect(await router.choose(null)).toMatchObject({ isReplica: true }); // so the first read below is the replica's
    const got = await call("jobs.get", { job_id: fresh });
    expect(got.status).toBe(200);
    expect(got.data.job_id).toBe(fresh);
    const onStatusPage = await router.run(null, (db) => tenantJob(db, { tenantId: "rr_t", jobTypes: [], jobId: fresh }));
    expect(onStatusPage?.job_id).toBe(fresh);
    // A job that exists nowhere is still a 404 (after the primary said so).
    expect((await call("jobs.get", { job_id: "0190a0a0-0000-7000-8000-000000000000" })).status).toBe(404);
  });

  it("a redrive just started and a triage just saved: the session's reads go to the primary until the replica replays them", async () => {
    expect(await router.choose(null)).toMatchObject({ isReplica: true });
    const created = await call("dlq.redrives.create", { selection: { job_ids: dead }, rate_per_s: 0.1, reason: "replica test" }, { method: "POST" });
    expect(created.status).toBe(200);
    redriveId = created.data.redrive_id;
    cookie = cookieIn(created.setCookie);
    expect(created.setCookie).toMatch(/HttpOnly/);
    expect(created.setCookie).toMatch(/SameSite=Lax/);

    const ids = async (c?: string) => (await call("dlq.redrives.list", {}, c ? { cookie: c } : {})).data.redrives.map((r) => r.redrive_id);
    expect(await ids(cookie)).toContain(redriveId); // this session: the primary
    expect(await ids()).not.toContain(redriveId); // another session: the replica, not yet replayed
    // Its progress page by id: not on the replica yet, so the primary answers.
    expect((await call("dlq.redrives.get", { id: redriveId })).data).toMatchObject({ redrive_id: redriveId, status: "running" });

    const groups = await call("dlq.groups.list", { dead_only: false }, { cookie });
    const group = groups.data.groups.find((g) => dead.includes(g.sample_job_id));
    expect(group).toMatchObject({ status: "new" });
    const triaged = await call("dlq.groups.triage", { id: group!.id, status: "investigating" }, { method: "POST", cookie });
    expect(triaged.status).toBe(200);
    const afterTriage = cookieIn(triaged.setCookie);
    expect((await call("dlq.groups.get", { id: group!.id }, { cookie: afterTriage })).data.status).toBe("investigating");
    expect((await call("dlq.groups.get", { id: group!.id })).data.status).toBe("new"); // the replica, paused
    cookie = afterTriage;
  });

  it("once the replica has replayed the session's last write, that session reads the replica again", async () => {
    await resumeReplay();
    await caughtUp();
    await pauseReplay();
    const [later] = await enqueueMany(owner, 1, { jobType: "rr-q.job", tenantId: "rr_t", key: "later" });
    const listed = await listedJobs({ cookie });
    expect(listed).toContain(fresh); // replayed before the pause
    expect(listed).not.toContain(later); // so this list came from the replica
    expect((await call("dlq.redrives.list", {}, { cookie })).data.redrives.map((r) => r.redrive_id)).toContain(redriveId);
  });

  it("a replica lagging beyond the bound: reads go to the primary", async () => {
    const strict = new ReadReplica({ primary: app, replica: appReplica, maxLagS: 1, refreshMs: 50 });
    await new Promise((r) => setTimeout(r, 1300)); // replay paused since the last test: the last replayed commit ages
    expect(await strict.refresh()).toMatchObject({ state: "lagging" });
    const [newest] = await enqueueMany(owner, 1, { jobType: "rr-q.job", tenantId: "rr_t", key: "newest" });
    expect(await listedJobs({ via: strict })).toContain(newest);
    expect(await listedJobs()).not.toContain(newest); // the 60 s bound still reads the paused replica
    await resumeReplay();
  });

  it("a stopped replica: reads go to the primary, never an error; /api/health says so; it serves again once back", async () => {
    await caughtUp();
    await standby.end();
    await replica.stopServer();
    const [whileDown] = await enqueueMany(owner, 1, { jobType: "rr-q.job", tenantId: "rr_t", key: "down" });
    // The router still believes the replica up (its last probe): the failed read runs again on the primary.
    expect(await listedJobs()).toContain(whileDown);
    expect((await call("jobs.get", { job_id: whileDown })).status).toBe(200);
    expect((await call("overview.signals", { window_s: 300 })).status).toBe(200);
    expect((await router.status()).state).toBe("down");
    const health = await checkHealth(app, { replica: router });
    expect(health).toMatchObject({ status: "ok", database: "up", replica: { state: "down", lag_s: null } });

    await replica.start();
    standby = await connectStandby();
    for (let i = 0; (await router.refresh()).state !== "up"; i++) {
      if (i > 200) throw new Error(`the replica did not come back: ${JSON.stringify(await router.status())}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(await checkHealth(app, { replica: router })).toMatchObject({ status: "ok", replica: { state: "up" } });
    await caughtUp();
    expect(await listedJobs()).toContain(whileDown);
  });
});
