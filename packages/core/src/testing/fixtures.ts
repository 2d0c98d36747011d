// Job-state probes of core's integration tests; control-plane rows come from control-plane-factory.ts.
import type { Db } from "../db";
import type { EnqueueInput } from "../sql/enqueue-jobs";

/** The control-plane factory's builder, for tests that import it from here (new tests: control-plane-factory.ts). */
export { controlPlane } from "./control-plane-factory";

let jobInputs = 0;
/** An enqueue input of `type` for tenant_A with a payload and idempotency key unique within the test process. */
export const jobInput = (type: string, over: Partial<EnqueueInput> = {}): EnqueueInput => {
  jobInputs += 1;
  return { job_type: type, tenant_id: "tenant_A", payload: { n: jobInputs }, idempotency_key: `k${jobInputs}`, ...over };
};

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

/**
 * `count` more READY jobs copied from the stored job whose idempotency key is `template` (as the
 * bench generates a backlog: same queue, tenant and priority, each one step later in virtual
 * time), with keys `<prefix><n>` — thousands in one statement, for tests at depth.
 */
export const cloneJobs = async (db: Db, params: { template: string; count: number; prefix: string }): Promise<void> => {
  await db.query(
    `INSERT INTO jobs (job_id, job_type, queue_id, tenant_id, payload, priority, idempotency_key, state, max_attempts,
                       timeout_s, run_at, trace_id, vft)
     SELECT gen_random_uuid(), t.job_type, t.queue_id, t.tenant_id, t.payload, t.priority, $3 || g, t.state, t.max_attempts,
            t.timeout_s, t.run_at, t.trace_id, t.vft + g
       FROM jobs t CROSS JOIN generate_series(1, $2::int) g WHERE t.idempotency_key = $1`,
    [params.template, params.count, params.prefix],
  );
};
