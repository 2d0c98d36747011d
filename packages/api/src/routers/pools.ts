import { AppError } from "@porter/contracts";
import { drainQueues, listConfig, listWorkers, queueOverview, setQueuesPaused } from "@porter/core";
import { z } from "zod";
import { actorOf } from "../actor";
import { ZConfigId, ZPoolCreate, ZPoolRow, ZPoolUpdate, ZReason } from "../schemas/control-plane";
import { createTRPCRouter, operatorProcedure, viewerProcedure } from "../trpc";
import { configRouter } from "./config";
import { ZWorkerRow } from "./worker-row";
import { workersRouter } from "./workers";

const ZPoolOverview = ZPoolRow.and(
  z.object({
    queues: z.array(z.object({ id: z.string(), paused: z.boolean(), running: z.number().int() })),
    running: z.number().int(),
    workers: z.array(ZWorkerRow),
  }),
);

const ZPoolAction = z.strictObject({ id: ZConfigId, reason: ZReason });
const ZPoolActionResult = z.object({ id: z.string(), queues: z.array(z.string()), changed: z.array(z.string()) });

const queuesOf = async (prisma: Parameters<typeof listConfig>[0], poolId: string): Promise<string[]> => {
  const queues = (await listConfig(prisma, "queue")).filter((q) => q.pool_id === poolId).map((q) => q.id);
  if (!(await listConfig(prisma, "pool")).some((p) => p.id === poolId)) throw new AppError("NOT_FOUND", { message: `pool ${poolId} not found` });
  if (queues.length === 0) throw new AppError("CONFLICT", { message: `pool ${poolId} has no queues` });
  return queues;
};

/** Lanes/pools with their queues and live workers; config (admin); drain/resume a whole pool (operator). */
export const poolsRouter = createTRPCRouter({
  ...configRouter("pool", { row: ZPoolRow, create: ZPoolCreate, update: ZPoolUpdate })._def.record,

  /** pools.workers.running / get / attempts: what each worker runs now and what it ran. */
  workers: workersRouter,

  /**
   * Every pool with its queues (paused, running) and its workers: live ones with host, pid,
   * start, last heartbeat, running jobs and draining flag; lost ones (no heartbeat for WORKER_LOST_AFTER_MS, three intervals);
   * with `include_stopped`, those that exited.
   */
  overview: viewerProcedure
    .input(z.strictObject({ include_stopped: z.boolean().default(false) }).default({ include_stopped: false }))
    .output(z.array(ZPoolOverview))
    .query(async ({ ctx, input }) => {
      const [pools, queues, workers] = await Promise.all([
        listConfig(ctx.prisma, "pool"),
        queueOverview(ctx.db),
        listWorkers(ctx.db, { includeStopped: input.include_stopped }),
      ]);
      return pools.map((p) => {
        const mine = queues.filter((q) => q.pool_id === p.id);
        return {
          ...(p as z.infer<typeof ZPoolRow>),
          queues: mine.map((q) => ({ id: q.queue_id, paused: q.paused, running: q.running })),
          running: mine.reduce((n, q) => n + q.running, 0),
          workers: workers.filter((w) => w.pool_id === p.id),
        };
      });
    }),

  /** Pauses every queue of the pool (reason "drain"): running jobs finish, nothing new starts. Audited. */
  drain: operatorProcedure
    .input(ZPoolAction)
    .output(ZPoolActionResult)
    .mutation(async ({ ctx, input }) => {
      const queues = await queuesOf(ctx.prisma, input.id);
      const changed = await drainQueues(ctx.prisma, { queueIds: queues, actor: actorOf(ctx.session), ...(input.reason ? { reason: input.reason } : {}) });
      return { id: input.id, queues, changed };
    }),

  /** Resumes every queue of the pool, in one transaction. Audited per queue that was paused. */
  resume: operatorProcedure
    .input(ZPoolAction)
    .output(ZPoolActionResult)
    .mutation(async ({ ctx, input }) => {
      const queues = await queuesOf(ctx.prisma, input.id);
      const changed = await setQueuesPaused(ctx.prisma, {
        queueIds: queues,
        paused: false,
        actor: actorOf(ctx.session),
        ...(input.reason ? { reason: input.reason } : {}),
      });
      return { id: input.id, queues, changed };
    }),
});
