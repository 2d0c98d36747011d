import { AppError } from "@porter/contracts";
import { drainQueues, getConfig, queueOverview, setQueuePaused } from "@porter/core";
import { z } from "zod";
import { actorOf } from "../actor";
import { ZConfigId, ZQueueCreate, ZQueueRow, ZQueueUpdate, ZReason } from "../schemas/control-plane";
import { createTRPCRouter, operatorProcedure, viewerProcedure } from "../trpc";
import { configRouter } from "./config";

const ZQueueAction = z.strictObject({ id: ZConfigId, reason: ZReason });
const ZPauseResult = z.object({ id: z.string(), paused: z.boolean(), changed: z.boolean(), running: z.number().int() });

const runningOf = async (ctx: { db: Parameters<typeof queueOverview>[0] }, id: string) =>
  (await queueOverview(ctx.db)).find((q) => q.queue_id === id)?.running ?? 0;

/** Pause (`paused`) or resume one queue: the flag, whether it changed, and the running count. */
const pauseProcedure = (paused: boolean) =>
  operatorProcedure
    .input(ZQueueAction)
    .output(ZPauseResult)
    .mutation(async ({ ctx, input }) => {
      const changed = await setQueuePaused(ctx.prisma, {
        queueId: input.id,
        paused,
        actor: actorOf(ctx.session),
        ...(input.reason ? { reason: input.reason } : {}),
      });
      return { id: input.id, paused, changed, running: await runningOf(ctx, input.id) };
    });

/** Queues: every knob (admin), pause/resume/drain (operator), and reads (viewer). */
export const queuesRouter = createTRPCRouter({
  ...configRouter("queue", { row: ZQueueRow, create: ZQueueCreate, update: ZQueueUpdate })._def.record,

  /** One queue's configuration (404 when unknown). */
  get: viewerProcedure
    .input(z.strictObject({ id: ZConfigId }))
    .output(ZQueueRow)
    .query(async ({ ctx, input }) => {
      const row = await getConfig(ctx.prisma, "queue", input.id);
      if (!row) throw new AppError("NOT_FOUND", { message: `queue ${input.id} not found` });
      return row as z.infer<typeof ZQueueRow>;
    }),

  /** Claims of this queue stop at once; running jobs continue. Audited. */
  pause: pauseProcedure(true),

  /** Claims of this queue resume. Audited. */
  resume: pauseProcedure(false),

  /**
   * Drain: pause (reason "drain" unless given) so no new job starts while running ones finish;
   * the result carries the running count, which the console watches fall to zero. Audited.
   */
  drain: operatorProcedure
    .input(ZQueueAction)
    .output(ZPauseResult)
    .mutation(async ({ ctx, input }) => {
      const changed = await drainQueues(ctx.prisma, { queueIds: [input.id], actor: actorOf(ctx.session), ...(input.reason ? { reason: input.reason } : {}) });
      return { id: input.id, paused: true, changed: changed.length > 0, running: await runningOf(ctx, input.id) };
    }),
});
