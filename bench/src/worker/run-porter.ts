import { createPool } from "@porter/db/pool";
import { defineHandler, RetryableError } from "@porter/sdk";
import { createHandlerMap } from "@porter/worker/handlers/handler-map";
import { createLogger } from "@porter/worker/logger";
import { PorterWorker } from "@porter/worker/runtime/worker";
import { REALISTIC_QUEUES } from "../realistic-mix";
import { QUEUE } from "../variants";
import { EFFECT_SQL, InjectedFailure, type JobLog } from "./job-log";
import type { BenchPayload, WorkerConfig } from "./protocol";
import type { RunningWorker } from "./runner";

/**
 * Porter's claim (core's claimJobs): a call of the `porter_claim` SQL function, or — in the
 * earlier shape — the UPDATE … SET state = 'RUNNING' fed by FOR UPDATE SKIP LOCKED.
 */
export const isPorterClaim = (text: string): boolean =>
  /\bporter_claim\s*\(/.test(text) || (/SKIP LOCKED/i.test(text) && /'RUNNING'/.test(text) && /lease_token/.test(text));

/**
 * Porter's worker runtime (`PorterWorker`, what `npm run worker` runs) with one handler for the
 * bench job type. Faulty mode applies its effect through `ctx.effect` (Porter's effect ledger:
 * at most once per key, in one transaction with the ledger row; by default, with `txOnly` as its
 * fn is one statement through tx, and as that one statement) or, like the peers, as a plain write
 * on the worker's pool.
 */
export const startPorter = async (config: WorkerConfig, url: string, log: JobLog): Promise<RunningWorker> => {
  const pool = createPool(url, { max: config.budget.connections, applicationName: "bench-porter-worker" });
  const effect = config.handler.kind === "faulty" ? config.handler.effect : "plain";
  // Scenario (i): one job type per queue of the pool, all running the same handler.
  const types = config.handler.kind === "realistic" ? REALISTIC_QUEUES.map((q) => `${q.id}.job`) : [`${QUEUE}.job`];
  const handlers = types.map((type) =>
    defineHandler({
      type,
      run: async (job, ctx) => {
        try {
          await log.run(job.payload as BenchPayload, job.attempt, (k) =>
            // The ledger stores fn's result: the statement's row count, as a handler would return a
            // small value — not the driver's result object (~1 KB of JSON, its type table). With
            // txOnly (fn only writes through tx) the claim joins the commit message.
            effect === "plain"
              ? pool.query(EFFECT_SQL, [k])
              : effect === "ledger-statement"
                ? ctx.effect(`effect-${k}`, { text: EFFECT_SQL, values: [k] })
                : ctx.effect(`effect-${k}`, async (tx) => (await tx.query(EFFECT_SQL, [k])).rowCount, { txOnly: effect === "ledger-tx-only" }),
          );
        } catch (error) {
          if (error instanceof InjectedFailure) throw new RetryableError(error.message, { code: "BENCH_TRANSIENT" });
          throw error;
        }
        return null;
      },
    }),
  );
  const worker = await PorterWorker.start({
    db: pool,
    connectionString: url,
    poolId: QUEUE,
    concurrency: config.budget.concurrency,
    logger: createLogger({ level: "error", destination: { write: (s: string) => process.stderr.write(s) } }),
    handlers: createHandlerMap(handlers),
  });
  return {
    info: { concurrency: worker.concurrency, poolMax: config.budget.connections },
    stop: async () => {
      await worker.drain({ graceMs: 2000 });
      await pool.end();
    },
  };
};
