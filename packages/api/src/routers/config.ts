import { type ConfigObjectType, createConfig, listConfig, updateConfig } from "@porter/core";
import { z } from "zod";
import { actorOf } from "../actor";
import { adminProcedure, createTRPCRouter, viewerProcedure } from "../trpc";

type CreateInput = { id: string; reason?: string } & Record<string, unknown>;
type UpdateInput = { id: string; patch: Record<string, unknown>; reason?: string };

/**
 * `list` (viewer), `create` and `update` (admin) for one control-plane table. Writes go through
 * @porter/core's createConfig/updateConfig (Prisma): validated (zod here, the entity's cross-field
 * rules on the merged row there), audited with before → after in the same transaction.
 */
export const configRouter = <Row, Create extends z.ZodType<CreateInput, unknown>, Update extends z.ZodType<UpdateInput, unknown>>(
  type: ConfigObjectType,
  schemas: { row: z.ZodType<Row, unknown>; create: Create; update: Update },
) =>
  createTRPCRouter({
    /** Every row, by id. */
    list: viewerProcedure.output(z.array(schemas.row)).query(({ ctx }) => listConfig(ctx.prisma, type)),

    /** Creates a row (409 when the id exists, 400 naming an unknown reference). */
    create: adminProcedure
      .input(schemas.create)
      .output(schemas.row)
      .mutation(({ ctx, input }) => {
        const { reason, ...values } = input as CreateInput;
        return createConfig(ctx.prisma, type, values, { actor: actorOf(ctx.session), ...(reason ? { reason } : {}) });
      }),

    /** Changes some fields of a row; the audit row holds only what changed (404 unknown id). */
    update: adminProcedure
      .input(schemas.update)
      .output(schemas.row)
      .mutation(({ ctx, input }) => {
        const { id, patch, reason } = input as UpdateInput;
        return updateConfig(ctx.prisma, type, id, patch, { actor: actorOf(ctx.session), ...(reason ? { reason } : {}) });
      }),
  });
