import { type EnqueueInput, enqueueJobs, PolicyCache } from "@porter/core";
import { createPool } from "@porter/db/pool";
import { makeWorkerUtils } from "graphile-worker";
import { PgBoss } from "pg-boss";
import { queueOf, REALISTIC_QUEUES, REALISTIC_TENANTS, tenantOf } from "../realistic-mix";
import { type Budget, QUEUE } from "../variants";
import { graphileTask, quietGraphileLogger } from "../worker/run-graphile";
import { pgBossQueue } from "../worker/run-pgboss";
import type { BenchJob, Session } from "./types";

/** Scenario (i)'s producer on a session's database: the mix's queues (and tenants) set up, jobs routed by k. */
export type RealisticProducer = {
  enqueueBatch: (jobs: BenchJob[]) => Promise<void>;
  /** Jobs of the mix not yet done. */
  pending: () => Promise<number>;
  close: () => Promise<void>;
};

const payloadOf = (job: BenchJob) => (job.t === undefined ? { k: job.k } : { k: job.k, t: job.t });

/**
 * Porter: the mix's queues in the session's pool (caps as the mix says), one job type per queue,
 * tenants with their weights; every job carries an idempotency key, as in the other scenarios.
 * graphile-worker: a task per queue; a capped queue's jobs spread round-robin over `cap` named queues
 * (each named queue runs one job at a time: at most `cap` at once, but a job can wait behind a long one
 * in its named queue while another of the same queue is free); a job key per job (its nearest to
 * Porter's idempotency key); no tenants. pg-boss: a queue per queue of the mix, no tenants.
 */
export const openRealistic = async (session: Session, budget: Budget): Promise<RealisticProducer> => {
  const { observer } = session;
  const count = async (sql: string) => (await observer.query<{ n: number }>(sql)).rows[0]!.n;
  switch (session.variant.system) {
    case "porter": {
      for (const q of REALISTIC_QUEUES) {
        await observer.query(`INSERT INTO queues (id, pool_id, default_max_attempts, max_attempts, concurrency_cap) VALUES ($1, $2, 25, 25, $3)`, [
          q.id,
          QUEUE,
          q.cap,
        ]);
        await observer.query(`INSERT INTO job_types (id, queue_id) VALUES ($1, $2)`, [`${q.id}.job`, q.id]);
      }
      for (const t of REALISTIC_TENANTS) await observer.query(`INSERT INTO tenants (id, weight) VALUES ($1, $2)`, [t.id, t.weight]);
      const pool = createPool(session.url, { max: budget.connections, applicationName: "bench-porter-producer" });
      const policyCache = new PolicyCache({ ttlMs: 1000 });
      const input = (job: BenchJob): EnqueueInput => ({
        job_type: `${queueOf(job.k).id}.job`,
        tenant_id: tenantOf(job.k).id,
        payload: payloadOf(job),
        idempotency_key: `r-${job.k}`,
      });
      return {
        enqueueBatch: async (jobs) => {
          await enqueueJobs(pool, jobs.map(input), { policyCache });
        },
        pending: () => count(`SELECT count(*)::int AS n FROM jobs`),
        close: () => pool.end(),
      };
    }
    case "graphile": {
      const utils = await makeWorkerUtils({ connectionString: session.url, logger: quietGraphileLogger() });
      return {
        enqueueBatch: async (jobs) => {
          await utils.addJobs(
            jobs.map((j) => {
              const q = queueOf(j.k);
              return {
                identifier: graphileTask(q.id),
                payload: payloadOf(j),
                jobKey: `r-${j.k}`,
                ...(q.cap === null ? {} : { queueName: `${q.id}-${j.k % q.cap}` }),
              };
            }),
          );
        },
        pending: () => count(`SELECT count(*)::int AS n FROM graphile_worker._private_jobs`),
        close: async () => {
          await utils.release();
        },
      };
    }
    case "pgboss": {
      const boss = new PgBoss({ connectionString: session.url, max: budget.connections, supervise: false, schedule: false });
      boss.on("error", (error) => process.stderr.write(`pg-boss producer error: ${String(error)}\n`));
      await boss.start();
      for (const q of REALISTIC_QUEUES) await boss.createQueue(pgBossQueue(q.id), { retryLimit: 24, retryDelay: 1, notify: session.variant.tuned });
      return {
        enqueueBatch: async (jobs) => {
          const byQueue = new Map<string, { data: object }[]>();
          for (const j of jobs) {
            const name = pgBossQueue(queueOf(j.k).id);
            (byQueue.get(name) ?? byQueue.set(name, []).get(name)!).push({ data: payloadOf(j) });
          }
          await Promise.all([...byQueue].map(([name, list]) => boss.insert(name, list)));
        },
        pending: () => count(`SELECT count(*)::int AS n FROM pgboss.job WHERE name LIKE '${QUEUE}-%' AND state < 'completed'`),
        close: () => boss.stop({ graceful: false, close: true }).catch(() => undefined),
      };
    }
  }
};
