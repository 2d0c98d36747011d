import { cancelJobs, jobStates, retryJobsNow } from "@porter/core";
import type pg from "pg";
import { jobIdArg } from "../args";
import { type Command, defineCommand } from "../command";
import { UsageError } from "../errors";

/** What one action did: the jobs changed (by how), and the others with why they were left alone. */
type ActionOutcome = { changed: Record<string, string[]>; skipped: Array<{ job_id: string; reason: string }> };

type JobAction = {
  verb: "cancel" | "retry";
  summary: string;
  description: string;
  /** The console's action (api routers/jobs/actions.ts): the same core operation, audited with `actor`. */
  apply: (pool: pg.Pool, params: { jobIds: string[]; actor: string; reason?: string }) => Promise<{ changed: Record<string, string[]>; skipped: string[] }>;
  /** Why a job in this state was skipped, when there is more to say than its state. */
  hint?: (state: string) => string | undefined;
};

/** `jobs cancel` / `jobs retry`: the console's job actions on the jobs given by id. */
const jobActionCommand = (action: JobAction): Command =>
  defineCommand({
    name: `jobs ${action.verb}`,
    summary: action.summary,
    usage: `jobs ${action.verb} <job_id>... [--reason R] [--json]`,
    description: action.description,
    options: { reason: { type: "string", arg: "<text>", help: "recorded in the audit log and the timeline" } },
    positionals: "many",
    run: async (ctx, { cmd, values, positionals }) => {
      if (positionals.length === 0) throw new UsageError(`${cmd}: give one or more job ids (see ${cmd} --help)`);
      if (positionals.length > 1000) throw new UsageError(`${cmd}: at most 1000 job ids at a time`);
      const jobIds = [...new Set(positionals.map((id) => jobIdArg(cmd, id)))];
      const reason = values.reason?.trim();
      if (reason !== undefined && reason.length > 500) throw new UsageError(`${cmd}: --reason must be at most 500 characters`);
      const { pool } = await ctx.db();
      const done = await action.apply(pool, { jobIds, actor: ctx.actor, ...(reason ? { reason } : {}) });
      const states = await jobStates(pool, done.skipped);
      const outcome: ActionOutcome = {
        changed: done.changed,
        skipped: done.skipped.map((id) => {
          const state = states.get(id);
          return { job_id: id, reason: state ? (action.hint?.(state) ?? `state ${state}`) : "not found" };
        }),
      };
      ctx.out.result(outcome, [
        ...Object.entries(outcome.changed).flatMap(([how, ids]) => (ids.length ? [`${how}: ${ids.length} job(s)`, ...ids.map((id) => `  ${id}`)] : [])),
        ...(outcome.skipped.length ? [`skipped: ${outcome.skipped.length} job(s)`, ...outcome.skipped.map((s) => `  ${s.job_id}: ${s.reason}`)] : []),
      ]);
    },
  });

/** `jobs cancel <id...>`. */
export const jobsCancelCommand = jobActionCommand({
  verb: "cancel",
  summary: "cancel jobs: queued ones at once, running ones asked to stop; audited",
  description:
    "Cancels jobs, as the console's Cancel does: READY and RETRY_WAIT jobs become CANCELLED at once;\n"
    + "RUNNING jobs get a cancel request (their worker aborts the handler and records CANCELLED).\n"
    + "Finished and unknown jobs are skipped. One transaction; each changed job gets a timeline event\n"
    + "and a `job.cancel` audit row with the CLI's actor (cli:<user>).",
  apply: async (pool, params) => {
    const out = await cancelJobs(pool, params);
    return { changed: { cancelled: out.cancelled, cancel_requested: out.cancel_requested }, skipped: out.skipped };
  },
});

/** `jobs retry <id...>`. */
export const jobsRetryCommand = jobActionCommand({
  verb: "retry",
  summary: "retry jobs waiting out a backoff (RETRY_WAIT) now; audited",
  description:
    "Retries now, as the console's Retry does: jobs waiting out a retry backoff (RETRY_WAIT) become\n"
    + "claimable at once and their pools' workers are woken. Jobs in other states are skipped (a DEAD\n"
    + "job is redriven instead: `redrive <job_id>`). One transaction; each retried job gets a\n"
    + "`retry_now` timeline event and a `job.retry` audit row with the CLI's actor (cli:<user>).",
  apply: async (pool, params) => {
    const out = await retryJobsNow(pool, params);
    return { changed: { retried: out.retried }, skipped: out.skipped };
  },
  hint: (state) => (state === "DEAD" ? "state DEAD (use redrive)" : undefined),
});
