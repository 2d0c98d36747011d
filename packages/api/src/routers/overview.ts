import { JOB_STATES } from "@porter/contracts";
import { listAudit, poolHealth, queueOverview, throughputByMinute } from "@porter/core";
import { z } from "zod";
import { ZAuditListInput, ZThroughputInput } from "../schemas/audit";
import { createTRPCRouter, viewerProcedure, viewerReadProcedure } from "../trpc";
import { seriesProcedure, signalsProcedure } from "./overview-flow";

const ZQueueOverview = z.object({
  queue_id: z.string(),
  pool_id: z.string(),
  paused: z.boolean(),
  concurrency_cap: z.number().int().nullable(),
  counts: z.record(z.enum(JOB_STATES), z.number().int()),
  running: z.number().int(),
  oldest_ready_age_s: z.number().nullable(),
  finished_last_5m: z.number().int(),
});
const ZThroughputPoint = z.object({
  minute: z.string(),
  succeeded: z.number().int(),
  dead: z.number().int(),
  cancelled: z.number().int(),
  expired: z.number().int(),
});

const ZPoolHealth = z.object({
  pool_id: z.string(),
  queues: z.number().int(),
  paused_queues: z.number().int(),
  live_workers: z.number().int(),
  lost_workers: z.number().int(),
  waiting: z.number().int(),
});

/**
 * The overview page: per queue counts, oldest ready age, running vs cap; completions per minute;
 * the flow charts' series and the signals (at risk, growing) of the overview and the queue page.
 */
export const overviewRouter = createTRPCRouter({
  queues: viewerReadProcedure.output(z.array(ZQueueOverview)).query(({ ctx }) => queueOverview(ctx.db)),
  /** Per pool: live and lost workers, waiting jobs — the health badge names pools nobody serves. */
  health: viewerProcedure.output(z.array(ZPoolHealth)).query(({ ctx }) => poolHealth(ctx.db)),
  throughput: viewerReadProcedure
    .input(ZThroughputInput)
    .output(z.array(ZThroughputPoint))
    .query(({ ctx, input }) => throughputByMinute(ctx.db, { minutes: input.minutes, ...(input.queue_id ? { queueId: input.queue_id } : {}) })),
  series: seriesProcedure,
  signals: signalsProcedure,
});

const ZAuditRow = z.object({
  id: z.string(),
  at: z.string(),
  actor: z.string(),
  action: z.string(),
  object_type: z.string(),
  object_id: z.string(),
  before: z.unknown(),
  after: z.unknown(),
  reason: z.string().nullable(),
});

/** The audit log: who did what to which object, when, before → after; filterable, newest first. */
export const auditRouter = createTRPCRouter({
  list: viewerReadProcedure
    .input(ZAuditListInput)
    .output(z.object({ entries: z.array(ZAuditRow), next_cursor: z.string().nullable() }))
    .query(({ ctx, input }) => {
      const f = input.filter;
      return listAudit(ctx.prisma, {
        filter: {
          ...(f.actor ? { actor: f.actor } : {}),
          ...(f.action ? { action: f.action } : {}),
          ...(f.object_type ? { objectType: f.object_type } : {}),
          ...(f.object_id ? { objectId: f.object_id } : {}),
          ...(f.from ? { from: new Date(f.from) } : {}),
          ...(f.to ? { to: new Date(f.to) } : {}),
        },
        cursor: input.cursor ?? null,
        limit: input.limit,
      });
    }),
});
