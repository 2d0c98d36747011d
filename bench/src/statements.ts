import type pg from "pg";

export type StatementCost = { query: string; calls: number; totalMs: number; rows: number };

/**
 * Where PostgreSQL's time went, per top-level statement, from pg_stat_statements — when the server
 * loads it (`shared_preload_libraries = 'pg_stat_statements'`; otherwise `start` returns null and
 * the bench says so). `start` resets this database's counters; `top` reads the costliest.
 */
export const statementProfile = async (db: pg.Pool) => {
  try {
    await db.query(`CREATE EXTENSION IF NOT EXISTS pg_stat_statements`);
    await db.query(`SELECT pg_stat_statements_reset(0, (SELECT oid FROM pg_database WHERE datname = current_database()), 0)`);
  } catch {
    return null;
  }
  return {
    top: async (n: number): Promise<StatementCost[]> => {
      const { rows } = await db.query<{ query: string; calls: string; total_ms: number; rows: string }>(
        `SELECT regexp_replace(query, '\\s+', ' ', 'g') AS query, calls::text, total_exec_time AS total_ms, rows::text
           FROM pg_stat_statements
          WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) AND toplevel
            AND query NOT LIKE '%pg_stat_statements%'
          ORDER BY total_exec_time DESC
          LIMIT $1`,
        [n],
      );
      return rows.map((r) => ({ query: r.query, calls: Number(r.calls), totalMs: r.total_ms, rows: Number(r.rows) }));
    },
  };
};

/** "`SELECT … FROM porter_claim(…)` 160 calls, 21.4 µs/job" — a statement's share of a run, per job. */
export const describeStatement = (s: StatementCost, jobs: number): string => {
  const text = s.query.length > 90 ? `${s.query.slice(0, 87)}…` : s.query;
  return `\`${text.replace(/`/g, "'")}\` ${s.calls} calls, ${((s.totalMs * 1000) / jobs).toFixed(1)} µs/job`;
};

/** A scenario's statement profiles, a line per configuration, printed as one note under its table. */
export class StatementNotes {
  private readonly lines = new Map<string, string>();

  /** Keeps `label`'s costliest statements (its last run's). */
  add(label: string, top: StatementCost[], jobs: number): void {
    this.lines.set(label, `${label}: ${top.map((t) => describeStatement(t, jobs)).join("; ")}`);
  }

  get size(): number {
    return this.lines.size;
  }

  /** The note, or none when no profile was taken (the server does not load pg_stat_statements). */
  notes(scope = ""): string[] {
    return this.lines.size > 0
      ? [`Where PostgreSQL's time went${scope} (pg_stat_statements, top-level statements, last run): ${[...this.lines.values()].join(" — ")}`]
      : [];
  }
}
