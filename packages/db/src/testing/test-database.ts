import { randomBytes } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import pg from "pg";
import { afterAll, afterEach, beforeAll, inject } from "vitest";
import { createPool } from "../pool";
import { type ControlDb, createPrisma } from "../prisma";
import { runtimeDatabaseUrl } from "../runtime-role";
import { withDatabase } from "./context";
import { startRestartableCluster } from "./restartable-cluster";

/** A database of one's own for an integration test file. */
export type TestDatabase = {
  /** Database name, `porter_test_<label>_<random>`. */
  name: string;
  connectionString: string;
  /** A pool on the database (max 5), ended by `drop()`. */
  pool: pg.Pool;
  /**
   * The same database as the runtime role (`porter_app`, which the template's migration created
   * and granted; the test server trusts local connections): what the console, workers and CLI
   * connect as. Fixtures that build state directly may use `pool` (the owner) instead.
   */
  appConnectionString: string;
  /** A pool (max 5) on {@link TestDatabase.appConnectionString}, opened on first use, ended by `drop()`. */
  appPool: pg.Pool;
  /** A Prisma client sharing {@link TestDatabase.pool} (the owner), opened on first use, disconnected by `drop()`. */
  prisma: ControlDb;
  /** A Prisma client sharing {@link TestDatabase.appPool} (the runtime role): what the console and CLI use. */
  appPrisma: ControlDb;
  /** Ends the pools and drops the database (terminating other connections to it). */
  drop: () => Promise<void>;
  /**
   * A server of its own only (`isOwnServer`): `pg_ctl restart -m immediate` of it, for crash cases
   * (restartable-cluster.ts). Throws on the shared server, which other suites use.
   */
  restartImmediate: () => Promise<void>;
};

/** Options of {@link createTestDatabase} and {@link useTestDatabase}. */
export type TestDatabaseOptions = {
  /**
   * `true`: an empty database (from `template0`, no migrations, no ledger), for tests of the
   * migrator itself. Default: a clone of the run's migrated template.
   */
  isEmpty?: boolean;
  /** Readable part of the name, e.g. the test file's name; slugged and cut to 24 characters. */
  label?: string;
  /**
   * `true`: the database is the only one of a PostgreSQL server of its own (a throwaway cluster,
   * migrated: restartable-cluster.ts), for tests whose outcome depends on what every database of
   * the server does — the status stream reads below the server-wide xmin, which any transaction of
   * any other test file holds back for as long as it stays open. Costs the cluster's start (seconds).
   */
  isOwnServer?: boolean;
};

/**
 * Creates a database for one test file: `CREATE DATABASE … TEMPLATE <migrated template>`, which
 * costs tens of milliseconds instead of a full migration. Needs the `integration` project's
 * global setup (packages/db/src/testing/global-setup.ts), which provides the template.
 */
export async function createTestDatabase(opts: TestDatabaseOptions = {}): Promise<TestDatabase> {
  if (opts.isOwnServer) {
    const cluster = await startRestartableCluster({ isMigrated: true });
    return handleOf("porter", cluster.connectionString, () => cluster.stop(), cluster.restartImmediate);
  }
  const adminUrl = inject("porterTestAdminUrl");
  const template = opts.isEmpty ? "template0" : inject("porterTestTemplate");
  if (!adminUrl || !template) {
    throw new Error("no template database: run integration tests with `vitest run --project integration`");
  }
  const label = slug(opts.label ?? "");
  const name = `porter_test_${label ? `${label}_` : ""}${randomBytes(4).toString("hex")}`;
  await withAdmin(adminUrl, async (client) => {
    const sql = `CREATE DATABASE ${client.escapeIdentifier(name)} TEMPLATE ${client.escapeIdentifier(template)}`;
    // 55006 object_in_use: the template is briefly busy (another file cloning it); retry.
    for (let attempt = 1; ; attempt++) {
      try {
        await client.query(sql);
        return;
      } catch (error) {
        if ((error as { code?: string }).code !== "55006" || attempt >= 20) throw error;
        await sleep(50 * attempt);
      }
    }
  });
  return handleOf(name, withDatabase(adminUrl, name), () =>
    withAdmin(adminUrl, (client) => client.query(`DROP DATABASE IF EXISTS ${client.escapeIdentifier(name)} WITH (FORCE)`)),
  );
}

/** The pools and clients of a test database at `connectionString`; `dropDatabase` runs after they end. */
function handleOf(
  name: string,
  connectionString: string,
  dropDatabase: () => Promise<unknown>,
  restartImmediate: () => Promise<void> = () =>
    Promise.reject(new Error("restartImmediate: only a test database on a server of its own (isOwnServer) can be restarted")),
): TestDatabase {
  const pool = createPool(connectionString, { max: 5, applicationName: "porter-test" });
  const appConnectionString = runtimeDatabaseUrl({ databaseUrl: connectionString });
  let appPool: pg.Pool | undefined;
  let prisma: ControlDb | undefined;
  let appPrisma: ControlDb | undefined;
  const getAppPool = () => (appPool ??= createPool(appConnectionString, { max: 5, applicationName: "porter-test-app" }));
  let dropped: Promise<void> | undefined;
  const drop = () =>
    (dropped ??= (async () => {
      await prisma?.$disconnect();
      await appPrisma?.$disconnect();
      await pool.end();
      await appPool?.end();
      await dropDatabase();
    })());
  return {
    name,
    connectionString,
    pool,
    appConnectionString,
    get appPool() {
      return getAppPool();
    },
    get prisma() {
      prisma ??= createPrisma(pool);
      return prisma;
    },
    get appPrisma() {
      appPrisma ??= createPrisma(getAppPool());
      return appPrisma;
    },
    drop,
    restartImmediate,
  };
}

/**
 * Registers hooks giving the calling test file its own database: created in `beforeAll`, dropped
 * in `afterAll` — unless a test or hook of the file failed, in which case the database is kept
 * for inspection and its connection string printed. Call it at the top level of the file; read
 * the returned object's fields inside tests and hooks (they throw before `beforeAll` ran).
 */
export function useTestDatabase(opts: TestDatabaseOptions = {}): TestDatabase {
  let db: TestDatabase | undefined;
  let hasFailure = false;
  beforeAll(
    // biome-ignore lint/correctness/noEmptyPattern: Vitest 4 reads a suite hook's first parameter as its fixtures and throws unless it is an object pattern; the suite is the second
    async ({}, suite) => {
      db = await createTestDatabase({ ...opts, label: opts.label ?? fileLabel(suite) });
    },
    // A server of its own is initdb, a start and every migration: as long as the crash suites allow theirs.
    opts.isOwnServer ? 120_000 : undefined,
  );
  afterEach((context) => {
    if (context.task.result?.state === "fail") hasFailure = true;
  });
  // biome-ignore lint/correctness/noEmptyPattern: as for beforeAll above
  afterAll(async ({}, suite) => {
    if (!db) return;
    // A server of its own is stopped either way: it would outlive the run.
    if ((hasFailure || hasFailed(suite)) && !opts.isOwnServer) {
      await db.prisma.$disconnect();
      await db.appPrisma.$disconnect();
      await db.pool.end();
      await db.appPool.end();
      console.warn(`[porter] kept test database ${db.name} for inspection: psql ${db.connectionString}`);
      return;
    }
    await db.drop();
  });
  const current = (): TestDatabase => {
    if (!db) throw new Error("useTestDatabase(): the database exists only inside tests and hooks");
    return db;
  };
  return {
    get name() {
      return current().name;
    },
    get connectionString() {
      return current().connectionString;
    },
    get pool() {
      return current().pool;
    },
    get appConnectionString() {
      return current().appConnectionString;
    },
    get appPool() {
      return current().appPool;
    },
    get prisma() {
      return current().prisma;
    },
    get appPrisma() {
      return current().appPrisma;
    },
    drop: () => current().drop(),
    restartImmediate: () => current().restartImmediate(),
  };
}

type TaskLike = {
  name: string;
  file?: { name: string };
  result?: { state?: string; errors?: unknown[] };
  tasks?: readonly TaskLike[];
};

function hasFailed(task: TaskLike): boolean {
  if (task.result?.state === "fail" || (task.result?.errors?.length ?? 0) > 0) return true;
  return (task.tasks ?? []).some(hasFailed);
}

function fileLabel(suite: TaskLike): string {
  const path = suite.file?.name ?? suite.name;
  return (path.split("/").pop() ?? "").replace(/\.(int\.)?test\.ts$/, "");
}

function slug(text: string): string {
  return text
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "_")
    .replace(/^_+|_+$/g, "")
    .slice(0, 24);
}

async function withAdmin(adminUrl: string, fn: (client: pg.Client) => Promise<unknown>): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl, application_name: "porter-test" });
  await client.connect();
  try {
    await fn(client);
  } finally {
    await client.end();
  }
}
