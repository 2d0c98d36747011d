import { setQueuePaused } from "@porter/core";
import { type Command, defineCommand } from "../command";

const pauseOrResume = (paused: boolean): Command => {
  const name = paused ? "pause" : "resume";
  return defineCommand({
    name,
    summary: paused ? "pause a queue (claims stop; running jobs continue)" : "resume a paused queue",
    usage: `${name} <queue> [--reason R] [--json]`,
    description: paused
      ? "Pauses a queue: workers stop claiming its jobs at once; running jobs continue. Audited."
      : "Resumes a paused queue: workers claim its jobs again. Audited.",
    options: { reason: { type: "string", arg: "<text>", help: "recorded in the audit log" } },
    positionals: { exactlyOne: "queue id" },
    run: async (ctx, { values, positionals: [queueId] }) => {
      const { prisma } = await ctx.db();
      const changed = await setQueuePaused(prisma, { queueId, paused, actor: ctx.actor, ...(values.reason ? { reason: values.reason } : {}) });
      ctx.out.result(
        { queue: queueId, paused, changed },
        `queue ${queueId} ${changed ? (paused ? "paused" : "resumed") : paused ? "was already paused" : "was not paused"}`,
      );
    },
  });
};

/** `pause <queue>`. */
export const pauseCommand = pauseOrResume(true);
/** `resume <queue>`. */
export const resumeCommand = pauseOrResume(false);
