import { type Job, type JobResult, PgBoss } from "pg-boss";
import { REALISTIC_QUEUES, slotsPerQueue } from "../realistic-mix";
import { QUEUE, TUNED } from "../variants";
import { EFFECT_SQL, InjectedFailure, type JobLog } from "./job-log";
import type { BenchPayload, WorkerConfig } from "./protocol";
import type { RunningWorker } from "./runner";

/** Scenario (i)'s pg-boss queue for a queue of the mix. */
export const pgBossQueue = (queue: string): string => `${QUEUE}-${queue}`;

/** pg-boss's fetch (plans.fetchNextJob): UPDATE … SET state = 'active' fed by FOR UPDATE OF j SKIP LOCKED. */
export const isPgBossClaim = (text: string): boolean => /SKIP LOCKED/.test(text) && /state = 'active'/.test(text) && /started_on = /.test(text);

/** Runs `fn` over `items` with at most `limit` at once. */
const eachLimited = async <T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> => {
  let next = 0;
  const lane = async () => {
    while (next < items.length) await fn(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
};

/**
 * pg-boss as its docs show: one PgBoss instance in this process, `work()` on the queue.
 * Default: the library's defaults (batchSize 1, 2 s polling) with localConcurrency = the shared
 * concurrency. Tuned: LISTEN/NOTIFY (the queue was created with notify), batches of 500 fetched by
 * 4 local workers, each batch run with concurrency/4 handlers at once (so 24 jobs run at once, as
 * for the others), burst fetching while batches come back full, per-job results so one failure
 * does not fail its batch.
 */
export const startPgBoss = async (config: WorkerConfig, url: string, log: JobLog): Promise<RunningWorker> => {
  const tuned = config.variant === "pgboss-tuned";
  const boss = new PgBoss({ connectionString: url, max: config.budget.connections, useListenNotify: tuned });
  boss.on("error", (error) => process.stderr.write(`pg-boss error: ${String(error)}\n`));
  await boss.start();
  const db = boss.getDb();
  const effect = (k: number) => db.executeSql(EFFECT_SQL, [k]);
  const runOne = (job: Job<BenchPayload>) => log.run(job.data, job.retryCount + 1, effect);
  const info: Record<string, unknown> = { max: config.budget.connections, useListenNotify: tuned };
  if (config.handler.kind === "realistic") {
    // Scenario (i): one work() per queue of the mix, its localConcurrency the queue's cap or its share of
    // the remaining slots (pg-boss has no pool-wide slot count nor cap); tuned: NOTIFY, batches of 50
    // per local worker run one job at a time, 0.5 s polling, burst fetching.
    const slots = slotsPerQueue(config.budget.concurrency);
    for (const q of REALISTIC_QUEUES) {
      const localConcurrency = slots.get(q.id)!;
      const options = tuned ? { ...TUNED.pgboss, batchSize: 50, localConcurrency, perJobResults: true as const } : { localConcurrency };
      await boss.work<BenchPayload>(pgBossQueue(q.id), options, async (jobs): Promise<JobResult[]> => {
        const results: JobResult[] = [];
        for (const job of jobs) {
          await runOne(job);
          results.push({ id: job.id, status: "completed" });
        }
        return results;
      });
    }
    Object.assign(info, { realistic: Object.fromEntries(slots), tuned });
  } else if (tuned) {
    const perBatch = Math.max(1, Math.ceil(config.budget.concurrency / TUNED.pgboss.localConcurrency));
    await boss.work<BenchPayload>(QUEUE, { ...TUNED.pgboss, perJobResults: true }, async (jobs): Promise<JobResult[]> => {
      const results: JobResult[] = [];
      await eachLimited(jobs, perBatch, async (job) => {
        try {
          await runOne(job);
          results.push({ id: job.id, status: "completed" });
        } catch (error) {
          if (!(error instanceof InjectedFailure)) process.stderr.write(`pg-boss handler: ${String(error)}\n`);
          results.push({ id: job.id, status: "failed", output: { message: String(error) } });
        }
      });
      return results;
    });
    Object.assign(info, TUNED.pgboss, { perBatchConcurrency: perBatch, queueNotify: (await boss.getQueue(QUEUE))?.notify });
  } else {
    await boss.work<BenchPayload>(QUEUE, { localConcurrency: config.budget.concurrency }, async (jobs) => {
      for (const job of jobs) await runOne(job);
    });
    Object.assign(info, { localConcurrency: config.budget.concurrency, queueNotify: (await boss.getQueue(QUEUE))?.notify });
  }
  return { info, stop: () => boss.stop({ graceful: true, timeout: 10_000 }) };
};
