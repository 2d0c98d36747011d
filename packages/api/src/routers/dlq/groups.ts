import { AppError } from "@porter/contracts";
import { getDlqGroup, listDlqGroupJobs, listDlqGroups, listReasonCodes, readJobTriage, triageGroup, triageJob, upsertReasonCode } from "@porter/core";
import { z } from "zod";
import { actorOf } from "../../actor";
import {
  ZGroupDetail,
  ZGroupId,
  ZGroupJobsInput,
  ZGroupJobsOutput,
  ZGroupListInput,
  ZGroupListOutput,
  ZGroupTriageInput,
  ZJobTriage,
  ZJobTriageInput,
  ZReasonCode,
  ZReasonCodeInput,
} from "../../schemas/dlq";
import { adminProcedure, createTRPCRouter, operatorProcedure, viewerProcedure, viewerReadProcedure } from "../../trpc";

const detailOf = async (db: Parameters<typeof getDlqGroup>[0], id: string) => {
  const group = await getDlqGroup(db, id);
  if (!group) throw new AppError("NOT_FOUND", { message: `failure group ${id} not found` });
  return group;
};

/** Failure groups: the Dead letters list, a group's detail and jobs (viewer), its triage (operator). */
export const groupsRouter = createTRPCRouter({
  /** Groups by filters (owner "me" is the caller), sorted, offset-paginated; only those with jobs still DEAD by default. */
  list: viewerReadProcedure
    .input(ZGroupListInput)
    .output(ZGroupListOutput)
    .query(({ ctx, input }) =>
      listDlqGroups(ctx.db, {
        ...(input.queue_id ? { queueId: input.queue_id } : {}),
        ...(input.job_type ? { jobType: input.job_type } : {}),
        ...(input.tenant_id ? { tenantId: input.tenant_id } : {}),
        ...(input.error_code ? { errorCode: input.error_code } : {}),
        ...(input.status ? { status: input.status } : {}),
        ...(input.owner ? { owner: input.owner } : {}),
        callerUserId: ctx.session.userId,
        isDeadOnly: input.dead_only,
        sort: input.sort,
        order: input.order,
        offset: input.cursor ? Number(input.cursor) : 0,
        limit: input.limit,
      }),
    ),

  /** One group: summary, worker versions, oldest dead job, thread. 404 when unknown. */
  get: viewerReadProcedure
    .input(z.strictObject({ id: ZGroupId }))
    .output(ZGroupDetail)
    .query(({ ctx, input }) => detailOf(ctx.db, input.id)),

  /** A group's jobs still DEAD (default) or every death of the last 14 days, newest first. */
  jobs: viewerReadProcedure
    .input(ZGroupJobsInput)
    .output(ZGroupJobsOutput)
    .query(({ ctx, input }) =>
      listDlqGroupJobs(ctx.db, { id: input.id, isDeadOnly: input.dead_only, offset: input.cursor ? Number(input.cursor) : 0, limit: input.limit }),
    ),

  /**
   * Owner ("me", a user id or e-mail, null), status (with its ignore), reason code and a note in
   * one call: each change on the thread, one audit row. Bad owner or code: 400, nothing changes.
   */
  triage: operatorProcedure
    .input(ZGroupTriageInput)
    .output(ZGroupDetail)
    .mutation(async ({ ctx, input }) => {
      await triageGroup(ctx.prisma, {
        id: input.id,
        ...(input.owner !== undefined ? { owner: input.owner } : {}),
        ...(input.status ? { status: input.status } : {}),
        ...(input.ignore ? { ignore: input.ignore } : {}),
        ...(input.reason_code !== undefined ? { reason_code: input.reason_code } : {}),
        ...(input.note ? { note: input.note } : {}),
        actor: actorOf(ctx.session),
        callerUserId: ctx.session.userId,
      });
      return detailOf(ctx.db, input.id);
    }),
});

/** A single dead job's own triage: read it (viewer), change it (operator). */
export const dlqJobsRouter = createTRPCRouter({
  /** Its owner, status, reason code, group and thread (status "new" until triaged). 404 unless it died. */
  get: viewerReadProcedure
    .input(z.strictObject({ job_id: z.uuid("a job id (uuid)") }))
    .output(ZJobTriage)
    .query(({ ctx, input }) => readJobTriage(ctx.prisma, input.job_id)),

  triage: operatorProcedure
    .input(ZJobTriageInput)
    .output(ZJobTriage)
    .mutation(({ ctx, input }) =>
      triageJob(ctx.prisma, {
        job_id: input.job_id,
        ...(input.owner !== undefined ? { owner: input.owner } : {}),
        ...(input.status ? { status: input.status } : {}),
        ...(input.reason_code !== undefined ? { reason_code: input.reason_code } : {}),
        ...(input.note ? { note: input.note } : {}),
        actor: actorOf(ctx.session),
        callerUserId: ctx.session.userId,
      }),
    ),
});

/** The operator-defined reason codes: read by everyone, edited by admins. */
export const reasonCodesRouter = createTRPCRouter({
  list: viewerProcedure
    .input(z.strictObject({}).default({}))
    .output(z.strictObject({ codes: z.array(ZReasonCode) }))
    .query(async ({ ctx }) => ({ codes: await listReasonCodes(ctx.prisma) })),

  /** Creates or edits a code (archive one to retire it); audited. */
  upsert: adminProcedure
    .input(ZReasonCodeInput)
    .output(ZReasonCode)
    .mutation(({ ctx, input }) => upsertReasonCode(ctx.prisma, { ...input, actor: actorOf(ctx.session) })),
});
