import type { TJobState } from "@porter/contracts";
import { advanceRedrive, cancelJobs, createRedrive, jobStates, planRedrive, retryJobsNow, selectJobIds } from "@porter/core";
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
 * jobs changed (0 on a dry run; for a redrive, the jobs it queued for redriving, moved at its
 * velocity), and skipped ones by reason.
 */
const ZBulkResult = z.object({
  dry_run: z.boolean(),
  eligible: z.number().int(),
  total: z.number().int(),
  capped: z.boolean(),
  applied: z.number().int(),
  job_ids: z.array(z.string()),
  skipped: z.record(z.string(), z.number().int()),
  /** Redrive: the durable redrive that runs it (its progress: dlq.redrives.get). */
  redrive_id: z.string().optional(),
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
 * Redrive (operator): DEAD → READY with a fresh attempt budget, through a durable redrive
 * (packages/core/src/dlq): the dry run is its plan (eligible, or skipped as expired, partial,
 * permanent, over quota, already); the confirm creates it at the default velocity and runs its
 * first batch at once, the maintenance leader the rest (`redrive_id` says which; progress in
 * dlq.redrives.get). Expired, partial and permanent jobs go only with `force`. Audited per job.
 */
export const redrive = operatorProcedure
  .input(ZBulkRedrive)
  .output(ZBulkResult)
  .mutation(async ({ ctx, input }: { ctx: ActionCtx; input: z.infer<typeof ZBulkRedrive> }) => {
    const r = await resolve(ctx.db, input.selection, ["DEAD"]);
    if (r.jobIds.length === 0) return summary(input.dry_run, r, []);
    const selection = { job_ids: r.jobIds };
    if (input.dry_run) {
      const plan = await planRedrive(ctx.db, { selection, force: input.force });
      for (const [reason, n] of Object.entries(plan.skipped)) bump(r.skipped, reason, n);
      return summary(true, { ...r, jobIds: plan.eligible, total: r.total - (r.jobIds.length - plan.eligible.length) }, []);
    }
    const created = await createRedrive(ctx.db, {
      selection,
      force: input.force,
      actor: actorOf(ctx.session),
      reason: input.reason ?? null,
    });
    // The first batch at once (the velocity's bucket starts full): a small redrive is done on return.
    await advanceRedrive(ctx.db, { id: created.redrive_id });
    const { rows } = await ctx.db.query<{ job_id: string; state: string; reason: string | null }>(
      `SELECT job_id::text, state, reason FROM redrive_items WHERE redrive_id = $1 ORDER BY job_id`,
      [created.redrive_id],
    );
    for (const item of rows) if (item.state === "skipped") bump(r.skipped, item.reason ?? "already");
    const queued = rows.filter((i) => i.state !== "skipped").map((i) => i.job_id);
    return { ...summary(false, { ...r, jobIds: queued, total: r.total - (rows.length - queued.length) }, queued), redrive_id: created.redrive_id };
  });
