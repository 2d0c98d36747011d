// Job-state probes of core's integration tests; control-plane rows come from control-plane-factory.ts.
import type { Db } from "../db";

/** The control-plane factory's builder, for tests that import it from here (new tests: control-plane-factory.ts). */
export { controlPlane } from "./control-plane-factory";

/** Row counts of the job tables, to assert that a refused request stored nothing. */
export const jobTableCounts = async (db: Db) => {
  const { rows } = await db.query<Record<string, string>>(
    `SELECT (SELECT count(*) FROM jobs) AS jobs, (SELECT count(*) FROM finished_jobs) AS finished,
            (SELECT count(*) FROM idempotency_keys) AS keys, (SELECT count(*) FROM job_events) AS events`,
  );
  const r = rows[0]!;
  return { jobs: Number(r.jobs), finished: Number(r.finished), keys: Number(r.keys), events: Number(r.events) };
};

/** The state of a job wherever it lives. */
export const stateOf = async (db: Db, jobId: string): Promise<string | null> => {
  const { rows } = await db.query<{ state: string }>(
    `SELECT state::text FROM jobs WHERE job_id = $1 UNION ALL SELECT state::text FROM finished_jobs WHERE job_id = $1`,
    [jobId],
  );
  return rows[0]?.state ?? null;
};
