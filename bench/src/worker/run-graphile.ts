import { EventEmitter } from "node:events";
import { Logger, run, type Task, type WorkerEvents } from "graphile-worker";
import pg from "pg";
import { REALISTIC_QUEUES } from "../realistic-mix";
import { QUEUE, TUNED } from "../variants";
import { EFFECT_SQL, type JobLog } from "./job-log";
import type { BenchPayload, WorkerConfig } from "./protocol";
import type { RunningWorker } from "./runner";

/** Scenario (i)'s task identifier for a queue of the mix. */
export const graphileTask = (queue: string): string => `${QUEUE}_${queue}`;

/** graphile-worker's get-jobs statement (sql/getJobs): lock available jobs, bump attempts. */
export const isGraphileClaim = (text: string): boolean =>
  /_private_jobs/.test(text) && /skip\s+locked/i.test(text) && /attempts = jobs\.attempts \+ 1/.test(text);

/**
 * Errors only, and not the expected failures of faulty mode (graphile-worker logs each failed
 * attempt at error level). Success lines are off anyway: the parent sets NO_LOG_SUCCESS=1.
 */
export const quietGraphileLogger = (): Logger =>
  new Logger(() => (level, message) => {
    if (level === "error" && !message.includes("injected transient failure")) process.stderr.write(`graphile-worker: ${message}\n`);
  });

/**
 * graphile-worker run as its docs show for a library (`run` with a task list), in this process.
 * Default: concurrentJobs and maxPoolSize from the shared budget, nothing else. Tuned: the
 * batching settings of the docs' performance page (local queue, batched completions/failures).
 */
export const startGraphile = async (config: WorkerConfig, url: string, log: JobLog): Promise<RunningWorker> => {
  const tuned = config.variant === "graphile-tuned";
  const events = new EventEmitter() as WorkerEvents;
  const info: Record<string, unknown> = { localQueue: false };
  events.on("localQueue:init", () => {
    info.localQueue = true;
  });
  const task: Task = async (payload, helpers) => {
    await log.run(payload as BenchPayload, helpers.job.attempts, (k) => helpers.withPgClient((client) => client.query(EFFECT_SQL, [k])));
  };
  // Scenario (i): one task per queue of the mix (capped ones spread over named queues by the producer).
  const identifiers = config.handler.kind === "realistic" ? REALISTIC_QUEUES.map((q) => graphileTask(q.id)) : [QUEUE];
  // The pool graphile-worker would make from connectionString and maxPoolSize, made here so that it
  // has an error listener for its whole life: graphile-worker removes its own at stop, and an idle
  // client it kept then died when the run's database was dropped ("terminating connection due to
  // administrator command"), an unhandled 'error' event that ended this process and the bench.
  const pgPool = new pg.Pool({ connectionString: url, max: config.budget.connections });
  pgPool.on("error", () => undefined);
  pgPool.on("connect", (client) => client.on("error", () => undefined));
  const runner = await run({
    pgPool,
    noHandleSignals: true,
    logger: quietGraphileLogger(),
    events,
    taskList: Object.fromEntries(identifiers.map((id) => [id, task])),
    preset: {
      worker: {
        connectionString: url,
        maxPoolSize: config.budget.connections,
        concurrentJobs: config.budget.concurrency,
        // Scenario (i) runs tuned without the local queue: with it, a named queue yields one job per
        // fetch and a drained local queue fetches again only at pollInterval (2 s) — measured: the
        // capped queues' jobs ran at ~6/s. Without it each worker fetches as soon as its job ends.
        ...(tuned && config.handler.kind === "realistic"
          ? { completeJobBatchDelay: TUNED.graphile.completeJobBatchDelay, failJobBatchDelay: TUNED.graphile.failJobBatchDelay }
          : {}),
        ...(tuned && config.handler.kind !== "realistic"
          ? {
              localQueue: { size: TUNED.graphile.localQueueSize },
              completeJobBatchDelay: TUNED.graphile.completeJobBatchDelay,
              failJobBatchDelay: TUNED.graphile.failJobBatchDelay,
            }
          : {}),
      },
    },
  });
  info.concurrentJobs = config.budget.concurrency;
  info.maxPoolSize = config.budget.connections;
  // graphile-worker stops its own runner when its worker pool exits with an error (seen in (i),
  // tuned: "deadlock detected" completing a batch of named-queue jobs, then the pool ended under
  // the jobs still running). The run then reports what it finished and why it stopped, instead
  // of the whole bench dying on `stop()`'s "Runner is already stopped".
  let stoppedItself: string | null = null;
  runner.promise.then(
    () => {
      stoppedItself ??= "its worker pool exited";
    },
    (error: unknown) => {
      stoppedItself = String(error);
    },
  );
  return {
    info,
    stop: async () => {
      if (stoppedItself !== null) {
        info.stoppedItself = stoppedItself;
        process.stderr.write(`graphile-worker: the runner had stopped by itself (${info.stoppedItself}); its run counts what finished\n`);
      } else await runner.stop();
      await pgPool.end();
    },
  };
};
