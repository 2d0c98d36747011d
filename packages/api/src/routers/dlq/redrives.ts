import { AppError } from "@porter/contracts";
import { abortRedrive, createRedrive, getRedrive, listRedrives, planRedrive, type RedriveSelection } from "@porter/core";
import { actorOf } from "../../actor";
import {
  ZRedrive,
  ZRedriveAbort,
  ZRedriveCreate,
  ZRedriveId,
  ZRedriveListInput,
  ZRedriveListOutput,
  ZRedrivePreview,
  ZRedriveRequest,
} from "../../schemas/dlq";
import { createTRPCRouter, operatorProcedure, viewerReadProcedure } from "../../trpc";

/** The most verdicts and eligible ids a preview lists (the counts cover every job). */
const PREVIEW_LIST = 1000;

/**
 * The dry run (operator: it is the first step of a redrive): the selection frozen at now, each
 * job's eligibility and the counts. Changes nothing.
 */
const preview = operatorProcedure
  .input(ZRedriveRequest)
  .output(ZRedrivePreview)
  .mutation(async ({ ctx, input }) => {
    const plan = await planRedrive(ctx.db, { selection: input.selection as RedriveSelection, force: input.force });
    return {
      eligible: plan.eligible.length,
      skipped: plan.skipped,
      job_ids: plan.eligible.slice(0, PREVIEW_LIST),
      jobs: plan.jobs.slice(0, PREVIEW_LIST).map((j) => ({ job_id: j.job_id, eligible: j.reason === null, reason: j.reason })),
      cutoff: plan.cutoff.toISOString(),
    };
  });

/**
 * Starts a durable redrive at `rate_per_s`: the selection frozen at now; the maintenance leader
 * moves it in batches (the first one at once, the rest at the velocity). Audited.
 */
const create = operatorProcedure
  .input(ZRedriveCreate)
  .output(ZRedrive)
  .mutation(async ({ ctx, input }) =>
    createRedrive(ctx.db, {
      selection: input.selection as RedriveSelection,
      force: input.force,
      ratePerS: input.rate_per_s,
      reason: input.reason ?? null,
      actor: actorOf(ctx.session),
    }),
  );

const list = viewerReadProcedure
  .input(ZRedriveListInput)
  .output(ZRedriveListOutput)
  .query(async ({ ctx, input }) => listRedrives(ctx.db, { status: input.status, offset: input.cursor ? Number(input.cursor) : 0, limit: input.limit }));

const get = viewerReadProcedure
  .input(ZRedriveId)
  .output(ZRedrive)
  .query(async ({ ctx, input }) => {
    const redrive = await getRedrive(ctx.db, input.id);
    if (!redrive) throw new AppError("NOT_FOUND", { message: `no redrive ${input.id}` });
    return redrive;
  });

/** Aborts a running redrive (it stops within one batch). 409 once it finished. Audited. */
const abort = operatorProcedure
  .input(ZRedriveAbort)
  .output(ZRedrive)
  .mutation(async ({ ctx, input }) => abortRedrive(ctx.db, { id: input.id, actor: actorOf(ctx.session), reason: input.reason ?? null }));

/** dlq.redrives.*: durable, rate-limited redrives (issue 12). */
export const redrivesRouter = createTRPCRouter({ preview, create, list, get, abort });
