import { randomUUID } from "node:crypto";
import { PgBoss } from "pg-boss";
import { createDatabase } from "../database";
import { type Budget, QUEUE, type Variant } from "../variants";
import { cloneRows } from "./clone-rows";
import { type BenchJob, EFFECTS_TABLE_SQL, observerPool, type Session } from "./types";

const dataOf = (job: BenchJob) => (job.t === undefined ? { k: job.k } : { k: job.k, t: job.t });

/**
 * pg-boss on a fresh database: the producer is a PgBoss instance of its own (the worker process
 * has another) that installs the schema and creates the queue — with `notify` in the tuned
 * variant, as its LISTEN/NOTIFY docs require — and enqueues with `insert` (batch) and `send`
 * (single). It does not supervise or schedule: that is the worker instance's job. Retries: 25
 * attempts, 1 s apart, as the other systems are set.
 */
export const openPgBoss = async (adminUrl: string, variant: Variant, budget: Budget): Promise<Session> => {
  const database = await createDatabase(adminUrl, "pgboss");
  const boss = new PgBoss({ connectionString: database.url, max: budget.connections, supervise: false, schedule: false });
  boss.on("error", (error) => process.stderr.write(`pg-boss producer error: ${String(error)}\n`));
  await boss.start();
  await boss.createQueue(QUEUE, { retryLimit: 24, retryDelay: 1, notify: variant.tuned });
  const observer = observerPool(database.url);
  await observer.query(EFFECTS_TABLE_SQL);
  const template = await boss.send(QUEUE, { k: 0 });
  await observer.query(`CREATE TABLE bench_template_jobs AS SELECT * FROM pgboss.job WHERE id = $1`, [template]);
  await observer.query(`DELETE FROM pgboss.job WHERE id = $1`, [template]);

  const count = async (sql: string) => (await observer.query<{ n: number }>(sql, [QUEUE])).rows[0]!.n;
  return {
    variant,
    url: database.url,
    observer,
    enqueueBatch: async (jobs) => {
      // Ids are chosen here (JobInsert.id) so they can be tracked without asking pg-boss to return them.
      const inserts = jobs.map((j) => ({ id: randomUUID(), data: dataOf(j) }));
      await boss.insert(QUEUE, inserts);
      return inserts.map((i) => i.id);
    },
    enqueueOne: async (job) => {
      const id = await boss.send(QUEUE, dataOf(job));
      if (!id) throw new Error("pg-boss send returned no id");
      return id;
    },
    pending: () => count(`SELECT count(*)::int AS n FROM pgboss.job WHERE name = $1 AND state < 'completed'`),
    doneAmong: async (ids) => {
      const { rows } = await observer.query<{ id: string }>(
        `SELECT id::text AS id FROM pgboss.job WHERE name = $1 AND id = ANY($2::uuid[]) AND state = 'completed'`,
        [QUEUE, ids],
      );
      return new Set(rows.map((r) => r.id));
    },
    succeededInDb: () => count(`SELECT count(*)::int AS n FROM pgboss.job WHERE name = $1 AND state = 'completed'`),
    generate: async (kind, from, count) => {
      const ready = kind === "ready";
      const at = ready ? `now() - interval '3 hours' + g * interval '1 millisecond'` : `now() - interval '1 hour'`;
      await cloneRows(observer, {
        table: "pgboss.job",
        template: `SELECT * FROM bench_template_jobs`,
        overrides: {
          id: "gen_random_uuid()",
          data: `jsonb_build_object('k', g)`,
          created_on: at,
          start_after: at,
          ...(ready ? {} : { state: `'completed'`, started_on: at, completed_on: at, output: "NULL" }),
        },
        from,
        count,
      });
      return true;
    },
    close: async () => {
      await boss.stop({ graceful: false, close: true }).catch(() => undefined);
      await observer.end();
      await database.drop();
    },
  };
};
