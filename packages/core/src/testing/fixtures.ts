import type { Db } from "../db";

export type QueueFixture = {
  id: string;
  concurrency_cap?: number | null;
  lease_seconds?: number;
  paused?: boolean;
  default_priority?: number;
  max_priority?: number;
  default_max_attempts?: number;
  max_attempts?: number;
  backoff_base_ms?: number;
  backoff_cap_ms?: number;
  max_runtime_s?: number;
  default_deadline_s?: number | null;
  retention_s?: number;
};

/**
 * Builds a control plane directly in SQL for tests: one pool, its queues, one job type per queue
 * (named `<queue>.job` unless listed in `jobTypes`), and tenants.
 */
export const controlPlane = async (
  db: Db,
  spec: {
    pool?: string;
    poolCap?: number | null;
    queues: QueueFixture[];
    jobTypes?: Array<{ id: string; queue: string; timeout_s?: number }>;
    tenants?: Array<{ id: string; max_priority?: number; max_attempts?: number }>;
  },
): Promise<void> => {
  const pool = spec.pool ?? "p1";
  await db.query(`INSERT INTO pools (id, concurrency_cap) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING`, [pool, spec.poolCap ?? null]);
  for (const q of spec.queues) {
    await db.query(
      `INSERT INTO queues (id, pool_id, concurrency_cap, lease_seconds, paused, default_priority, max_priority,
                           default_max_attempts, max_attempts, backoff_base_ms, backoff_cap_ms, max_runtime_s,
                           default_deadline_s, retention_s)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`,
      [
        q.id, pool, q.concurrency_cap ?? null, q.lease_seconds ?? 30, q.paused ?? false, q.default_priority ?? 50,
        q.max_priority ?? 100, q.default_max_attempts ?? 5, q.max_attempts ?? 25, q.backoff_base_ms ?? 10,
        q.backoff_cap_ms ?? 1000, q.max_runtime_s ?? 3600, q.default_deadline_s ?? null, q.retention_s ?? 604800,
      ],
    );
  }
  const types: Array<{ id: string; queue: string; timeout_s?: number }> =
    spec.jobTypes ?? spec.queues.map((q) => ({ id: `${q.id}.job`, queue: q.id }));
  for (const t of types) {
    await db.query(`INSERT INTO job_types (id, queue_id, timeout_s) VALUES ($1, $2, $3)`, [t.id, t.queue, t.timeout_s ?? null]);
  }
  for (const t of spec.tenants ?? [{ id: "tenant_A" }, { id: "tenant_B" }]) {
    await db.query(`INSERT INTO tenants (id, max_priority, max_attempts) VALUES ($1, $2, $3) ON CONFLICT (id) DO NOTHING`, [
      t.id, t.max_priority ?? null, t.max_attempts ?? null,
    ]);
  }
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
