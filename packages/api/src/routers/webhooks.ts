import {
  addAllowedNetwork,
  createTenantWebhook,
  deleteTenantWebhook,
  getTenantWebhook,
  listAllowedNetworks,
  listTenantWebhooks,
  listWebhookDeliveries,
  removeAllowedNetwork,
  rotateTenantWebhookSecret,
  updateTenantWebhook,
} from "@porter/core";
import { z } from "zod";
import { actorOf } from "../actor";
import {
  ZAllowedNetwork,
  ZAllowlistAdd,
  ZAllowlistRemove,
  ZWebhookCreate,
  ZWebhookCreated,
  ZWebhookDelete,
  ZWebhookDeliveries,
  ZWebhookDeliveryPage,
  ZWebhookList,
  ZWebhookRotate,
  ZWebhookRotated,
  ZWebhookRow,
  ZWebhookUpdate,
} from "../schemas/webhooks";
import { adminProcedure, createTRPCRouter, operatorProcedure, viewerProcedure } from "../trpc";

/** The SSRF guard's allow-list: admins only (it opens private networks to every tenant's webhooks). */
const allowlistRouter = createTRPCRouter({
  list: adminProcedure.output(z.array(ZAllowedNetwork)).query(({ ctx }) => listAllowedNetworks(ctx.prisma)),
  add: adminProcedure
    .input(ZAllowlistAdd)
    .output(ZAllowedNetwork)
    .mutation(({ ctx, input }) =>
      addAllowedNetwork(ctx.prisma, { cidr: input.cidr, ...(input.note ? { note: input.note } : {}), actor: actorOf(ctx.session) }),
    ),
  remove: adminProcedure
    .input(ZAllowlistRemove)
    .output(z.object({ cidr: z.string(), removed: z.literal(true) }))
    .mutation(({ ctx, input }) => removeAllowedNetwork(ctx.prisma, { cidr: input.cidr, actor: actorOf(ctx.session) })),
});

/**
 * Tenant webhooks (issue 13): endpoints listed without secrets and their delivery log (viewer);
 * added, changed, rotated and deleted by an operator — a secret is in the create and rotate
 * responses once and never again.
 */
export const webhooksRouter = createTRPCRouter({
  list: viewerProcedure
    .input(ZWebhookList)
    .output(z.array(ZWebhookRow))
    .query(({ ctx, input }) => listTenantWebhooks(ctx.prisma, input.tenant_id)),

  create: operatorProcedure
    .input(ZWebhookCreate)
    .output(ZWebhookCreated)
    .mutation(({ ctx, input }) =>
      createTenantWebhook(ctx.prisma, {
        tenantId: input.tenant_id,
        url: input.url,
        events: input.events,
        description: input.description || null,
        actor: actorOf(ctx.session),
      }),
    ),

  update: operatorProcedure
    .input(ZWebhookUpdate)
    .output(ZWebhookRow)
    .mutation(({ ctx, input }) =>
      updateTenantWebhook(ctx.prisma, {
        id: input.id,
        ...(input.url !== undefined ? { url: input.url } : {}),
        ...(input.events !== undefined ? { events: input.events } : {}),
        ...(input.description !== undefined ? { description: input.description || null } : {}),
        ...(input.enabled !== undefined ? { enabled: input.enabled } : {}),
        actor: actorOf(ctx.session),
      }),
    ),

  rotateSecret: operatorProcedure
    .input(ZWebhookRotate)
    .output(ZWebhookRotated)
    .mutation(({ ctx, input }) =>
      rotateTenantWebhookSecret(ctx.prisma, {
        id: input.id,
        ...(input.overlap_seconds !== undefined ? { overlapSeconds: input.overlap_seconds } : {}),
        actor: actorOf(ctx.session),
      }),
    ),

  delete: operatorProcedure
    .input(ZWebhookDelete)
    .output(z.object({ id: z.string(), deleted: z.literal(true) }))
    .mutation(({ ctx, input }) => deleteTenantWebhook(ctx.prisma, { id: input.id, actor: actorOf(ctx.session) })),

  deliveries: viewerProcedure
    .input(ZWebhookDeliveries)
    .output(ZWebhookDeliveryPage)
    .query(async ({ ctx, input }) => {
      await getTenantWebhook(ctx.prisma, input.id); // 404 for an unknown endpoint
      return listWebhookDeliveries(ctx.prisma, { endpointId: input.id, cursor: input.cursor ?? null, ...(input.limit ? { limit: input.limit } : {}) });
    }),

  allowlist: allowlistRouter,
});
