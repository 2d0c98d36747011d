import pg from "pg";
import { migrate } from "@porter/db";

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

/** A fresh, migrated database per system per run; dropped by the returned function. */
export const freshPorterDatabase = async (adminUrl: string, label: string) => {
  const name = `porter_bench_${label}_${Date.now()}`.replace(/[^a-z0-9_]/g, "_");
  await adminQuery(adminUrl, `CREATE DATABASE ${name}`);
  const url = databaseUrl(adminUrl, name);
  await migrate(url);
  return { name, url, drop: () => adminQuery(adminUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) };
};

/** Counters from pg_stat_database and pg_stat_user_tables, for per-job costs. */
export type PgStats = { commits: number; walBytes: number; deadTuples: number };

export const readStats = async (pool: pg.Pool): Promise<PgStats> => {
  const { rows } = await pool.query<{ commits: string; wal: string; dead: string }>(
    `SELECT (SELECT xact_commit FROM pg_stat_database WHERE datname = current_database())::text AS commits,
            pg_current_wal_lsn() - '0/0'::pg_lsn AS wal,
            (SELECT coalesce(sum(n_dead_tup), 0) FROM pg_stat_user_tables)::text AS dead`,
  );
  const r = rows[0]!;
  return { commits: Number(r.commits), walBytes: Number(r.wal), deadTuples: Number(r.dead) };
};
