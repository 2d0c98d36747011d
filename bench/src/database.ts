import pg from "pg";

/** The connection string of another database on the same server. */
export const databaseUrl = (adminUrl: string, name: string): string => {
  const u = new URL(adminUrl);
  u.pathname = `/${name}`;
  return u.toString();
};

export const adminQuery = async (adminUrl: string, sql: string): Promise<void> => {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
};

export type BenchDatabase = { name: string; url: string; drop: () => Promise<void> };

let sequence = 0;

/** A new empty database for one system's run; `drop` removes it (with FORCE). */
export const createDatabase = async (adminUrl: string, label: string): Promise<BenchDatabase> => {
  const name = `bench_${label}_${process.pid}_${Date.now().toString(36)}_${sequence++}`.replace(/[^a-z0-9_]/g, "_");
  await adminQuery(adminUrl, `CREATE DATABASE ${name}`);
  return { name, url: databaseUrl(adminUrl, name), drop: () => adminQuery(adminUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) };
};

/** Drops the databases a killed earlier run left behind (names carry the dead process's pid). */
export const dropLeftovers = async (adminUrl: string): Promise<number> => {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const { rows } = await client.query<{ datname: string }>(`SELECT datname FROM pg_database WHERE datname LIKE 'bench\\_%'`);
    let dropped = 0;
    for (const { datname } of rows) {
      const pid = Number(/^bench_[a-z]+_(\d+)_/.exec(datname)?.[1]);
      if (!Number.isInteger(pid) || pid === process.pid || isAlive(pid)) continue;
      await client.query(`DROP DATABASE IF EXISTS ${datname} WITH (FORCE)`);
      dropped++;
    }
    return dropped;
  } finally {
    await client.end();
  }
};

/** Whether process `pid` still exists (a backend not yet reaped counts). */
export const isAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/**
 * Counters for per-job costs. `commits` is the database's own (pg_stat_database); tuple counters sum
 * pg_stat_user_tables over the database; `walBytes` is the server's WAL position, so it is
 * cluster-wide: other work on the same server during a measurement is counted too.
 */
export type PgStats = {
  commits: number;
  walBytes: number;
  /** Dead row versions created: every update and delete leaves one (n_tup_upd + n_tup_del). */
  deadTuples: number;
  hotUpdates: number;
  /** n_dead_tup now: what vacuum has not yet removed. */
  deadNow: number;
  /** Rows written (inserted, updated, deleted) in this database and in all others, to tell when WAL is shared. */
  ownWrites: number;
  otherWrites: number;
};

const readStats = async (pool: pg.Pool): Promise<PgStats> => {
  const { rows } = await pool.query<{ commits: string; wal: string; dead: string; hot: string; dead_now: string; own: string; other: string }>(
    `SELECT (SELECT xact_commit FROM pg_stat_database WHERE datname = current_database())::text AS commits,
            (SELECT coalesce(sum(tup_inserted + tup_updated + tup_deleted), 0) FROM pg_stat_database
              WHERE datname = current_database())::text AS own,
            (SELECT coalesce(sum(tup_inserted + tup_updated + tup_deleted), 0) FROM pg_stat_database
              WHERE datname IS DISTINCT FROM current_database())::text AS other,
            (pg_current_wal_lsn() - '0/0'::pg_lsn)::text AS wal,
            (SELECT coalesce(sum(n_tup_upd + n_tup_del), 0) FROM pg_stat_user_tables)::text AS dead,
            (SELECT coalesce(sum(n_tup_hot_upd), 0) FROM pg_stat_user_tables)::text AS hot,
            (SELECT coalesce(sum(n_dead_tup), 0) FROM pg_stat_user_tables)::text AS dead_now`,
  );
  const r = rows[0]!;
  return {
    commits: Number(r.commits),
    walBytes: Number(r.wal),
    deadTuples: Number(r.dead),
    hotUpdates: Number(r.hot),
    deadNow: Number(r.dead_now),
    ownWrites: Number(r.own),
    otherWrites: Number(r.other),
  };
};

/**
 * Statistics as of now: backends flush their counters at most once a second (and when they exit
 * or go idle), so wait past that, then take a fresh snapshot in a new transaction.
 */
export const settledStats = async (pool: pg.Pool): Promise<PgStats> => {
  await new Promise((r) => setTimeout(r, 1100));
  await pool.query(`SELECT pg_stat_force_next_flush()`).catch(() => undefined);
  await pool.query(`SELECT pg_stat_clear_snapshot()`);
  return readStats(pool);
};

/**
 * Per-job costs between two snapshots. `foreignShare` is the share of the server's row writes made
 * by other databases meanwhile: WAL is cluster-wide, so a high share means WAL B/job is inflated.
 */
export type PerJob = { commits: number; walBytes: number; deadTuples: number; hotUpdates: number; foreignShare: number };

export const perJob = (before: PgStats, after: PgStats, jobs: number): PerJob => {
  const own = after.ownWrites - before.ownWrites;
  const other = after.otherWrites - before.otherWrites;
  return {
    commits: (after.commits - before.commits) / jobs,
    walBytes: (after.walBytes - before.walBytes) / jobs,
    deadTuples: (after.deadTuples - before.deadTuples) / jobs,
    hotUpdates: (after.hotUpdates - before.hotUpdates) / jobs,
    foreignShare: own + other > 0 ? other / (own + other) : 0,
  };
};

/**
 * The server's settings that move the bench's figures, printed with every result: autovacuum above
 * all (off, a backlog is only settled by the bench's own VACUUM ANALYZE; on, its passes land in some
 * drains and not others), the buffer cache, the WAL's durability and its checkpoints.
 */
export const BENCH_SETTINGS = [
  "autovacuum",
  "shared_buffers",
  "synchronous_commit",
  "fsync",
  "full_page_writes",
  "max_wal_size",
  "checkpoint_timeout",
  "shared_preload_libraries",
] as const;

export type ServerInfo = { version: string; settings: string };

/** The server's version and `BENCH_SETTINGS` as one line ("autovacuum off, shared_buffers 128MB, …"; an empty value as ''). */
export const readServerInfo = async (client: pg.ClientBase): Promise<ServerInfo> => {
  const { rows } = await client.query<{ name: string; value: string }>(
    `SELECT name, current_setting(name) AS value FROM unnest($1::text[]) WITH ORDINALITY AS s(name, i) ORDER BY i`,
    [["server_version", ...BENCH_SETTINGS]],
  );
  const [version, ...settings] = rows;
  return { version: version!.value, settings: settings.map((r) => `${r.name} ${r.value === "" ? "''" : r.value}`).join(", ") };
};
