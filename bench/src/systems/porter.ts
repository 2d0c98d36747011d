import { type EnqueueInput, enqueueJobs, PolicyCache } from "@porter/core";
import { migrate } from "@porter/db/migrator";
import { createPool } from "@porter/db/pool";
import { createDatabase } from "../database";
import { type Budget, POLICY_TENANTS, QUEUE, type Variant } from "../variants";
import { cloneRows, uuidOf } from "./clone-rows";
import { startPorterHttp } from "./porter-http";
import { type BenchJob, EFFECTS_TABLE_SQL, observerPool, type Session } from "./types";

export const PORTER_JOB_TYPE = `${QUEUE}.job`;
export const PORTER_TENANT = QUEUE;

/** A bench job as a producer enqueues it: every Porter job carries an idempotency key. */
export const porterInput = (job: BenchJob): EnqueueInput => ({
  job_type: PORTER_JOB_TYPE,
  tenant_id: PORTER_TENANT,
  payload: job.t === undefined ? { k: job.k } : { k: job.k, t: job.t },
  idempotency_key: `k-${job.k}`,
});

/**
 * Porter on a fresh migrated database: one pool, one queue, one job type, one tenant, with the
 * product's defaults except max attempts (25, as the peers are set). Enqueues go through core's
 * `enqueueJobs` — what `producer.enqueue`/`enqueueBatch` run — with a policy cache held as the
 * console caches it (1 s).
 *
 * `porter-policy` (burn-down only): the pool also holds a queue capped at 4 (empty), so every claim
 * of the pool is under a queue cap, and generated jobs are spread over POLICY_TENANTS (weights
 * 1/1/2) with the virtual finish times and fair clocks an enqueue would have given them.
 */
export const openPorter = async (adminUrl: string, variant: Variant, budget: Budget): Promise<Session> => {
  const database = await createDatabase(adminUrl, "porter");
  await migrate(database.url);
  const pool = createPool(database.url, { max: budget.connections, applicationName: "bench-porter-producer" });
  const observer = observerPool(database.url);
  await observer.query(`INSERT INTO pools (id, worker_concurrency) VALUES ($1, $2)`, [QUEUE, budget.concurrency]);
  await observer.query(`INSERT INTO queues (id, pool_id, default_max_attempts, max_attempts) VALUES ($1, $1, 25, 25)`, [QUEUE]);
  await observer.query(`INSERT INTO job_types (id, queue_id) VALUES ($1, $2)`, [PORTER_JOB_TYPE, QUEUE]);
  await observer.query(`INSERT INTO tenants (id) VALUES ($1)`, [PORTER_TENANT]);
  const isPolicy = variant.id === "porter-policy";
  if (isPolicy) {
    await observer.query(`INSERT INTO queues (id, pool_id, concurrency_cap) VALUES ($1, $2, 4)`, [`${QUEUE}_capped`, QUEUE]);
    for (const t of POLICY_TENANTS) await observer.query(`INSERT INTO tenants (id, weight) VALUES ($1, $2)`, [t.id, t.weight]);
  }
  await observer.query(EFFECTS_TABLE_SQL);
  const policyCache = new PolicyCache({ ttlMs: 1000 });
  // A job stored by Porter itself is the template of generated rows; it does not stay queued.
  await enqueueJobs(pool, [{ ...porterInput({ k: 0 }), idempotency_key: "template" }], { policyCache, notify: false });
  await observer.query(`CREATE TABLE bench_template_jobs AS SELECT * FROM jobs WHERE idempotency_key = 'template'`);
  await observer.query(`CREATE TABLE bench_template_keys AS SELECT * FROM idempotency_keys WHERE idempotency_key = 'template'`);
  await observer.query(`DELETE FROM jobs WHERE idempotency_key = 'template'`);

  let http: Awaited<ReturnType<typeof startPorterHttp>> | undefined;
  const count = async (sql: string) => (await observer.query<{ n: number }>(sql)).rows[0]!.n;
  return {
    variant,
    url: database.url,
    observer,
    enqueueBatch: async (jobs) => (await enqueueJobs(pool, jobs.map(porterInput), { policyCache })).map((r) => r.job_id),
    enqueueOne: async (job) => (await enqueueJobs(pool, [porterInput(job)], { policyCache }))[0]!.job_id,
    pending: () => count(`SELECT count(*)::int AS n FROM jobs`),
    doneAmong: async (ids) => {
      const { rows } = await observer.query<{ id: string }>(
        `SELECT job_id::text AS id FROM finished_jobs WHERE job_id = ANY($1::uuid[]) AND state = 'SUCCEEDED'`,
        [ids],
      );
      return new Set(rows.map((r) => r.id));
    },
    succeededInDb: () => count(`SELECT count(*)::int AS n FROM finished_jobs WHERE state = 'SUCCEEDED'`),
    generate: async (kind, from, count) => {
      const ready = kind === "ready";
      const prefix = ready ? "a0000000" : "f0000000";
      const at = ready ? `now() - interval '3 hours' + g * interval '1 millisecond'` : `now() - interval '1 hour'`;
      // The policy variant: job g belongs to tenant g mod 3, its k-th job (k = g div 3 + 1) at
      // virtual finish time k / weight — what enqueueing them round-robin would have given.
      const tenants = `(ARRAY[${POLICY_TENANTS.map((t) => `'${t.id}'`).join(", ")}])[g % 3 + 1]`;
      const weights = `(ARRAY[${POLICY_TENANTS.map((t) => t.weight).join(", ")}]::float8[])[g % 3 + 1]`;
      const common = {
        job_id: uuidOf("g", prefix),
        payload: `jsonb_build_object('k', g)`,
        idempotency_key: `'gen-' || g`,
        run_at: at,
        created_at: at,
        ...(isPolicy && ready ? { tenant_id: tenants, vft: `(g / 3 + 1) / ${weights}` } : {}),
      };
      await cloneRows(observer, {
        table: "idempotency_keys",
        template: `SELECT * FROM bench_template_keys`,
        overrides: { idempotency_key: common.idempotency_key, job_id: common.job_id, created_at: at, ...(isPolicy && ready ? { tenant_id: tenants } : {}) },
        from,
        count,
      });
      await cloneRows(observer, {
        table: ready ? "jobs" : "finished_jobs",
        template: `SELECT * FROM bench_template_jobs`,
        overrides: ready
          ? common
          : {
              ...common,
              id: `nextval(pg_get_serial_sequence('jobs', 'id'))`,
              state: `'SUCCEEDED'`,
              attempt: "1",
              claimed_at: at,
              finished_at: at,
              last_worker: `'bench-generated'`,
              result: `'null'::jsonb`,
            },
        from,
        count,
      });
      if (isPolicy && ready) {
        await observer.query(
          `INSERT INTO fair_clocks (queue_id, tenant_id, last_vft)
           SELECT queue_id, tenant_id, max(vft) FROM jobs GROUP BY queue_id, tenant_id
           ON CONFLICT (queue_id, tenant_id) DO UPDATE SET last_vft = greatest(fair_clocks.last_vft, EXCLUDED.last_vft)`,
        );
      }
      return true;
    },
    http: async () => (http ??= await startPorterHttp(pool, database.url, budget.connections)),
    reset: async () => {
      await observer.query(`TRUNCATE jobs, idempotency_keys, job_stream`);
    },
    close: async () => {
      await http?.close();
      await pool.end();
      await observer.end();
      await database.drop();
    },
  };
};
