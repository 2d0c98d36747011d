import { setQueuePaused } from "@porter/core";
import { parseCommandArgs } from "../args";
import { type Command, helpText } from "../command";
import { UsageError } from "../errors";

const pauseOrResume = (paused: boolean): Command => {
  const name = paused ? "pause" : "resume";
  return {
    name,
    summary: paused ? "pause a queue (claims stop; running jobs continue)" : "resume a paused queue",
    help: helpText(
      `${name} <queue> [--reason R] [--json]`,
      paused
        ? "Pauses a queue: workers stop claiming its jobs at once; running jobs continue. Audited."
        : "Resumes a paused queue: workers claim its jobs again. Audited.",
      [["--reason <text>", "recorded in the audit log"]],
    ),
    run: async (ctx, argv) => {
      const { values, positionals } = parseCommandArgs(name, argv, { reason: { type: "string" } }, true);
      if (positionals.length !== 1) throw new UsageError(`${name}: expected exactly one queue id (see ${name} --help)`);
      const queueId = positionals[0]!;
      const { prisma } = await ctx.db();
      const changed = await setQueuePaused(prisma, { queueId, paused, actor: ctx.actor, ...(values.reason ? { reason: values.reason } : {}) });
      ctx.out.result(
        { queue: queueId, paused, changed },
        `queue ${queueId} ${changed ? (paused ? "paused" : "resumed") : paused ? "was already paused" : "was not paused"}`,
      );
    },
  };
};

/** `pause <queue>`. */
export const pauseCommand = pauseOrResume(true);
/** `resume <queue>`. */
export const resumeCommand = pauseOrResume(false);
