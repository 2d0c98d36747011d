import { AppError } from "@porter/contracts";
import { listWorkerAttempts, listWorkerRunningJobs, listWorkers } from "@porter/core";
import { z } from "zod";
import { ZWorkerAttempt, ZWorkerAttemptsInput, ZWorkerGetInput, ZWorkerRunningJob, ZWorkersRunningInput } from "../schemas/usage";
import { createTRPCRouter, viewerProcedure } from "../trpc";
import { ZWorkerRow } from "./worker-row";

/** pools.workers.*: what each worker runs now and what it ran (viewer). */
export const workersRouter = createTRPCRouter({
  /** The RUNNING jobs of every live or lost worker (of one pool with `pool_id`), oldest claim first. */
  running: viewerProcedure
    .input(ZWorkersRunningInput)
    .output(z.array(ZWorkerRunningJob))
    .query(async ({ ctx, input }) => {
      const workers = await listWorkers(ctx.db, input.pool_id ? { poolId: input.pool_id } : {});
      return listWorkerRunningJobs(ctx.db, { workerIds: workers.map((w) => w.id) });
    }),

  /** One worker's facts (host, pid, version, pool, concurrency, heartbeat, status) and its running jobs; NOT_FOUND for an unknown id. */
  get: viewerProcedure
    .input(ZWorkerGetInput)
    .output(ZWorkerRow.extend({ jobs: z.array(ZWorkerRunningJob) }))
    .query(async ({ ctx, input }) => {
      const [worker] = await listWorkers(ctx.db, { workerId: input.id, includeStopped: true });
      if (!worker) throw new AppError("NOT_FOUND", { message: `worker ${input.id} not found` });
      return { ...worker, jobs: await listWorkerRunningJobs(ctx.db, { workerIds: [worker.id] }) };
    }),

  /** One worker's ended attempts, newest first, cursor-paginated; NOT_FOUND for an unknown id. */
  attempts: viewerProcedure
    .input(ZWorkerAttemptsInput)
    .output(z.object({ attempts: z.array(ZWorkerAttempt), next_cursor: z.string().nullable() }))
    .query(async ({ ctx, input }) => {
      const [worker] = await listWorkers(ctx.db, { workerId: input.id, includeStopped: true });
      if (!worker) throw new AppError("NOT_FOUND", { message: `worker ${input.id} not found` });
      return listWorkerAttempts(ctx.db, { workerId: input.id, limit: input.limit, cursor: input.cursor ?? null });
    }),
});
