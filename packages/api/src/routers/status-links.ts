import { createStatusLink, listStatusLinks, revokeStatusLink } from "@porter/core";
import { z } from "zod";
import { actorOf } from "../actor";
import { ZStatusLinkCreate, ZStatusLinkCreated, ZStatusLinkList, ZStatusLinkRevoke, ZStatusLinkRow } from "../schemas/status-links";
import { createTRPCRouter, operatorProcedure, viewerProcedure } from "../trpc";

/** The path a status link's token is followed at (the console's route handler). */
export const statusLinkPath = (token: string) => `/status/link/${token}`;

/**
 * Tenant status links (issue 13): listed without tokens (viewer); issued and revoked by an operator
 * ("an operator issues a link"). The token is in the create response once and never again.
 */
export const statusLinksRouter = createTRPCRouter({
  list: viewerProcedure
    .input(ZStatusLinkList)
    .output(z.array(ZStatusLinkRow))
    .query(({ ctx, input }) => listStatusLinks(ctx.prisma, input.tenant_id)),

  create: operatorProcedure
    .input(ZStatusLinkCreate)
    .output(ZStatusLinkCreated)
    .mutation(async ({ ctx, input }) => {
      const link = await createStatusLink(ctx.prisma, {
        tenantId: input.tenant_id,
        ...(input.job_types ? { jobTypes: input.job_types } : {}),
        ...(input.expires_in_s === undefined ? {} : { expiresInSeconds: input.expires_in_s }),
        actor: actorOf(ctx.session),
      });
      return { ...link, path: statusLinkPath(link.token) };
    }),

  revoke: operatorProcedure
    .input(ZStatusLinkRevoke)
    .output(z.object({ id: z.string(), revoked: z.literal(true) }))
    .mutation(async ({ ctx, input }) => {
      await revokeStatusLink(ctx.prisma, { id: input.id, actor: actorOf(ctx.session), ...(input.reason ? { reason: input.reason } : {}) });
      return { id: input.id, revoked: true as const };
    }),
});
