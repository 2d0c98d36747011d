import { createApiKey, createUser, listApiKeys, listUsers, revokeApiKey, updateUser } from "@porter/core";
import { z } from "zod";
import { actorOf } from "../actor";
import { ZApiKeyCreate, ZApiKeyRevoke, ZRole, ZUserCreate, ZUserUpdate } from "../schemas/control-plane";
import { adminProcedure, createTRPCRouter, viewerProcedure } from "../trpc";

const ZApiKeyRow = z.object({
  id: z.string(),
  name: z.string(),
  tenant_ids: z.array(z.string()),
  job_types: z.array(z.string()),
  created_by: z.string(),
  created_at: z.string(),
  last_used_at: z.string().nullable(),
  revoked_at: z.string().nullable(),
});

/** Producer API keys: listed without secrets (viewer); created and revoked by admins. */
export const apiKeysRouter = createTRPCRouter({
  list: viewerProcedure.output(z.array(ZApiKeyRow)).query(({ ctx }) => listApiKeys(ctx.prisma)),

  /** Creates a key; the response carries the full key once — only a hash of its secret is stored. */
  create: adminProcedure
    .input(ZApiKeyCreate)
    .output(z.object({ key: z.string(), id: z.string(), tenants: z.array(z.string()), job_types: z.array(z.string()) }))
    .mutation(({ ctx, input }) =>
      createApiKey(ctx.prisma, { tenantIds: input.tenant_ids, jobTypes: input.job_types, name: input.name, actor: actorOf(ctx.session) }),
    ),

  /** Revokes a key: later requests with it are refused (401). */
  revoke: adminProcedure
    .input(ZApiKeyRevoke)
    .output(z.object({ id: z.string(), revoked: z.literal(true) }))
    .mutation(async ({ ctx, input }) => {
      await revokeApiKey(ctx.prisma, { id: input.id, actor: actorOf(ctx.session), ...(input.reason ? { reason: input.reason } : {}) });
      return { id: input.id, revoked: true as const };
    }),
});

const ZUserRow = z.object({
  id: z.string(),
  email: z.string(),
  name: z.string(),
  role: ZRole,
  created_at: z.string(),
  disabled_at: z.string().nullable(),
});

/** Console users and roles: admins only (emails are personal data). */
export const usersRouter = createTRPCRouter({
  list: adminProcedure.output(z.array(ZUserRow)).query(({ ctx }) => listUsers(ctx.prisma)),

  /** Creates a user with an argon2id password hash (409 on a used email). */
  create: adminProcedure
    .input(ZUserCreate)
    .output(ZUserRow)
    .mutation(({ ctx, input }) => createUser(ctx.prisma, { ...input, actor: actorOf(ctx.session) })),

  /** Renames, changes the role, disables/enables or resets the password; never leaves no admin (409). */
  update: adminProcedure
    .input(ZUserUpdate)
    .output(ZUserRow)
    .mutation(({ ctx, input }) => {
      const { id, reason, ...patch } = input;
      return updateUser(ctx.prisma, { id, patch, actor: actorOf(ctx.session), ...(reason ? { reason } : {}) });
    }),
});

/** Who is signed in (the console shows it, and hides what the role may not do). */
export const meRouter = createTRPCRouter({
  get: viewerProcedure
    .output(z.object({ email: z.string(), name: z.string(), role: ZRole }))
    .query(({ ctx }) => ({ email: ctx.session.email, name: ctx.session.name ?? "", role: ctx.session.role })),
});
