import { makeWorkerUtils } from "graphile-worker";
import pg from "pg";
import { createDatabase } from "../database";
import { type Budget, QUEUE, type Variant } from "../variants";
import { quietGraphileLogger } from "../worker/run-graphile";
import { cloneRows } from "./clone-rows";
import { type BenchJob, EFFECTS_TABLE_SQL, observerPool, type Session } from "./types";

const JOBS = "graphile_worker._private_jobs";

const payloadOf = (job: BenchJob) => (job.t === undefined ? { k: job.k } : { k: job.k, t: job.t });
/** The key Porter's producers send for the same job (`porterInput`'s idempotency_key). */
const keyOf = (job: BenchJob) => `k-${job.k}`;

/**
 * graphile-worker on a fresh database, migrated by its own WorkerUtils; producers use
 * `addJobs` (batch) and `addJob` (single) on a pool of the shared budget. Successful jobs are
 * deleted by graphile-worker, so "done" is "gone from its jobs table".
 */
export const openGraphile = async (adminUrl: string, variant: Variant, budget: Budget): Promise<Session> => {
  const database = await createDatabase(adminUrl, "graphile");
  const pool = new pg.Pool({ connectionString: database.url, max: budget.connections, application_name: "bench-graphile-producer" });
  pool.on("error", () => undefined);
  pool.on("connect", (client) => client.on("error", () => undefined));
  const observer = observerPool(database.url);
  const utils = await makeWorkerUtils({ pgPool: pool, logger: quietGraphileLogger() });
  await utils.migrate();
  await observer.query(EFFECTS_TABLE_SQL);
  await utils.addJob(QUEUE, { k: 0 });
  await observer.query(`CREATE TABLE bench_template_jobs AS SELECT * FROM ${JOBS}`);
  await observer.query(`DELETE FROM ${JOBS}`);

  const count = async (sql: string) => (await observer.query<{ n: number }>(sql)).rows[0]!.n;
  /** `addJobs`, with a `jobKey` per job when `isKeyed`; each job's id in input order. */
  const addJobs = async (jobs: BenchJob[], isKeyed: boolean): Promise<string[]> => {
    const added = await utils.addJobs(jobs.map((j) => ({ identifier: QUEUE, payload: payloadOf(j), ...(isKeyed ? { jobKey: keyOf(j) } : {}) })));
    const byK = new Map(added.map((a) => [(a.payload as { k: number }).k, String(a.id)]));
    return jobs.map((j) => byK.get(j.k)!);
  };
  return {
    variant,
    url: database.url,
    observer,
    enqueueBatch: (jobs) => addJobs(jobs, false),
    enqueueOne: async (job) => String((await utils.addJob(QUEUE, payloadOf(job))).id),
    keyedBatch: (jobs) => addJobs(jobs, true),
    reset: async () => {
      await observer.query(`TRUNCATE ${JOBS}`);
    },
    pending: () => count(`SELECT count(*)::int AS n FROM ${JOBS}`),
    doneAmong: async (ids) => {
      const { rows } = await observer.query<{ id: string }>(`SELECT id::text AS id FROM ${JOBS} WHERE id = ANY($1::bigint[])`, [ids]);
      const live = new Set(rows.map((r) => r.id));
      return new Set(ids.filter((id) => !live.has(id)));
    },
    succeededInDb: async () => null,
    generate: async (kind, from, count) => {
      if (kind === "finished") return false;
      const at = `now() - interval '3 hours' + g * interval '1 millisecond'`;
      await cloneRows(observer, {
        table: JOBS,
        template: `SELECT * FROM bench_template_jobs`,
        overrides: { payload: `json_build_object('k', g)`, run_at: at, created_at: at, updated_at: at },
        from,
        count,
      });
      return true;
    },
    close: async () => {
      await utils.release();
      await pool.end().catch(() => undefined);
      await observer.end();
      await database.drop();
    },
  };
};
