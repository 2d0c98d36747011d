import { countsByState } from "@porter/core";
import { TRPCError } from "@trpc/server";
import { z } from "zod";
import { checkHealth } from "../health";
import { createTRPCRouter, publicProcedure, viewerProcedure } from "../trpc";

const ZCount = z.object({ queue_id: z.string(), state: z.string(), count: z.number().int() });

/** Liveness and the numbers the console's home page shows. */
export const systemRouter = createTRPCRouter({
  /** Process up and the database answering `select 1`; 503 when it does not. */
  health: publicProcedure.output(z.object({ status: z.literal("ok"), database: z.literal("up") })).query(async ({ ctx }) => {
    const report = await checkHealth(ctx.db);
    if (report.status !== "ok") throw new TRPCError({ code: "SERVICE_UNAVAILABLE", message: "database is down" });
    return report;
  }),

  /** Jobs by queue and state, live and finished (signed-in console users). */
  counts: viewerProcedure.output(z.array(ZCount)).query(({ ctx }) => countsByState(ctx.db)),
});
