import type { TJobState } from "@porter/contracts";
import { cancelJobs, jobStates, redriveJobs, retryJobsNow, selectJobIds } from "@porter/core";
import type pg from "pg";
import { z } from "zod";
import { actorOf } from "../../actor";
import type { Session } from "../../context";
import { MAX_BULK_JOBS, type TJobSelection, ZBulkJobAction, ZBulkRedrive } from "../../schemas/jobs";
import { operatorProcedure } from "../../trpc";
import { toCoreFilter } from "./filter";

/**
 * What a bulk action did (or, with `dry_run`, would do): `eligible` jobs it applies to now (at most
 * MAX_BULK_JOBS), `total` eligible jobs matching (more than `eligible` when `capped`), `applied`
 * jobs changed (0 on a dry run), and skipped ones by reason.
 */
const ZBulkResult = z.object({
  dry_run: z.boolean(),
  eligible: z.number().int(),
  total: z.number().int(),
  capped: z.boolean(),
  applied: z.number().int(),
  job_ids: z.array(z.string()),
  skipped: z.record(z.string(), z.number().int()),
});
type BulkResult = z.infer<typeof ZBulkResult>;

/** The jobs of a selection that are in one of `states`, with the rest counted by why they were left out. */
const resolve = async (
  pool: pg.Pool,
  selection: TJobSelection,
  states: readonly TJobState[],
): Promise<{ jobIds: string[]; total: number; skipped: Record<string, number> }> => {
  if ("filter" in selection) {
    const { jobIds, total } = await selectJobIds(pool, { filter: toCoreFilter(selection.filter), states, limit: MAX_BULK_JOBS });
    return { jobIds, total, skipped: {} };
  }
  const found = await jobStates(pool, [...new Set(selection.job_ids)]);
  const skipped: Record<string, number> = {};
  const jobIds: string[] = [];
  for (const id of new Set(selection.job_ids)) {
    const state = found.get(id);
    if (state && states.includes(state)) jobIds.push(id);
    else {
      const why = state ? `state ${state}` : "not found";
      skipped[why] = (skipped[why] ?? 0) + 1;
    }
  }
  return { jobIds, total: jobIds.length, skipped };
};

const bump = (into: Record<string, number>, key: string, n = 1) => {
  if (n > 0) into[key] = (into[key] ?? 0) + n;
};

const summary = (dryRun: boolean, r: { jobIds: string[]; total: number; skipped: Record<string, number> }, applied: string[]): BulkResult => ({
  dry_run: dryRun,
  eligible: r.jobIds.length,
  total: r.total,
  capped: r.total > r.jobIds.length,
  applied: applied.length,
  job_ids: (dryRun ? r.jobIds : applied).slice(0, 100),
  skipped: r.skipped,
});

type ActionCtx = { db: pg.Pool; session: Session };

/**
 * Cancel (operator): queued jobs (READY, RETRY_WAIT) become CANCELLED at once, running ones get a
 * cancel request; finished jobs are skipped. Dry run first, then confirm. Audited per job.
 */
export const cancel = operatorProcedure
  .input(ZBulkJobAction)
  .output(ZBulkResult)
  .mutation(async ({ ctx, input }: { ctx: ActionCtx; input: z.infer<typeof ZBulkJobAction> }) => {
    const r = await resolve(ctx.db, input.selection, ["READY", "RETRY_WAIT", "RUNNING"]);
    if (input.dry_run || r.jobIds.length === 0) return summary(input.dry_run, r, []);
    const out = await cancelJobs(ctx.db, { jobIds: r.jobIds, actor: actorOf(ctx.session), ...(input.reason ? { reason: input.reason } : {}) });
    bump(r.skipped, "finished meanwhile", out.skipped.length);
    return summary(false, r, [...out.cancelled, ...out.cancel_requested]);
  });

/**
 * Retry now (operator): jobs waiting out a retry backoff (RETRY_WAIT) run at once. DEAD jobs are
 * redriven instead (see `redrive`). Audited per job.
 */
export const retry = operatorProcedure
  .input(ZBulkJobAction)
  .output(ZBulkResult)
  .mutation(async ({ ctx, input }: { ctx: ActionCtx; input: z.infer<typeof ZBulkJobAction> }) => {
    const r = await resolve(ctx.db, input.selection, ["RETRY_WAIT"]);
    if (input.dry_run || r.jobIds.length === 0) return summary(input.dry_run, r, []);
    const out = await retryJobsNow(ctx.db, { jobIds: r.jobIds, actor: actorOf(ctx.session), ...(input.reason ? { reason: input.reason } : {}) });
    bump(r.skipped, "no longer waiting", out.skipped.length);
    return summary(false, r, out.retried);
  });

/**
 * Redrive (operator): DEAD → READY with a fresh attempt budget. Partially completed jobs and jobs
 * past their deadline are skipped unless `force`. The dry run reports both. Audited per job.
 */
export const redrive = operatorProcedure
  .input(ZBulkRedrive)
  .output(ZBulkResult)
  .mutation(async ({ ctx, input }: { ctx: ActionCtx; input: z.infer<typeof ZBulkRedrive> }) => {
    const r = await resolve(ctx.db, input.selection, ["DEAD"]);
    if (r.jobIds.length === 0) return summary(input.dry_run, r, []);
    const out = await redriveJobs(ctx.db, {
      jobIds: r.jobIds,
      force: input.force,
      actor: actorOf(ctx.session),
      dryRun: input.dry_run,
      ...(input.reason ? { reason: input.reason } : {}),
    });
    for (const s of out.skipped) bump(r.skipped, s.reason);
    const kept = { ...r, jobIds: out.redriven, total: r.total - out.skipped.length };
    return summary(input.dry_run, kept, input.dry_run ? [] : out.redriven);
  });
