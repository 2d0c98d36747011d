import { deleteAlertRule, deleteAlertWebhook, getAlertWebhook, listAlertRules, listAlerts, saveAlertRule, setAlertWebhook } from "@porter/core";
import { z } from "zod";
import { actorOf } from "../../actor";
import {
  ZAlertListInput,
  ZAlertListOutput,
  ZAlertRule,
  ZAlertRuleInput,
  ZAlertWebhook,
  ZAlertWebhookInput,
  ZAlertWebhookSet,
  ZGroupId,
} from "../../schemas/dlq";
import { adminProcedure, createTRPCRouter, viewerProcedure, viewerReadProcedure } from "../../trpc";

/**
 * DLQ alerts (issue 12): the alerts list and banner count (viewer), the rules (viewer reads,
 * admin saves and deletes; audited). The maintenance leader evaluates the rules (core's
 * evaluateAlerts); firing and resolved transitions are delivered to the alerts webhook.
 */
export const alertsRouter = createTRPCRouter({
  /** Alerts, newest first, firing and resolved (or one state), and how many fire now. */
  list: viewerReadProcedure
    .input(ZAlertListInput)
    .output(ZAlertListOutput)
    .query(({ ctx, input }) => listAlerts(ctx.prisma, input)),

  /** Every alert rule. */
  rules: viewerProcedure
    .input(z.strictObject({}).optional())
    .output(z.strictObject({ rules: z.array(ZAlertRule) }))
    .query(async ({ ctx }) => ({ rules: await listAlertRules(ctx.prisma) })),

  /** Creates a rule (no id) or updates one (404 unknown id or queue; 400 a zero window). Audited. */
  saveRule: adminProcedure
    .input(ZAlertRuleInput)
    .output(ZAlertRule)
    .mutation(({ ctx, input }) => saveAlertRule(ctx.prisma, { input, actor: actorOf(ctx.session) })),

  /** Deletes a rule and its alerts (404 unknown). Audited. */
  deleteRule: adminProcedure
    .input(z.strictObject({ id: ZGroupId }))
    .output(z.strictObject({ id: z.string() }))
    .mutation(({ ctx, input }) => deleteAlertRule(ctx.prisma, { id: input.id, actor: actorOf(ctx.session) })),
});

/** The alerts webhook (admin): never the secret, except once from `set` when it is new. */
export const webhookRouter = createTRPCRouter({
  /** The endpoint, or null; the secret only as its last 4 characters. */
  get: adminProcedure
    .input(z.strictObject({}).optional())
    .output(ZAlertWebhook.nullable())
    .query(({ ctx }) => getAlertWebhook(ctx.prisma)),

  /** Creates or changes the endpoint (404 unknown tenant); a new secret when created or with rotate_secret. Audited. */
  set: adminProcedure
    .input(ZAlertWebhookInput)
    .output(ZAlertWebhookSet)
    .mutation(({ ctx, input }) =>
      setAlertWebhook(ctx.prisma, {
        url: input.url,
        tenantId: input.tenant_id,
        enabled: input.enabled,
        rotateSecret: input.rotate_secret,
        actor: actorOf(ctx.session),
      }),
    ),

  /** Removes the endpoint (alerts still fire; nothing is delivered). Audited. */
  delete: adminProcedure
    .input(z.strictObject({}).optional())
    .output(z.strictObject({ deleted: z.boolean() }))
    .mutation(({ ctx }) => deleteAlertWebhook(ctx.prisma, { actor: actorOf(ctx.session) })),
});
