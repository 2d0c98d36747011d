// A resumable handler for the SIGKILL test (checkpoint-crash.int.test.ts): works through
// `steps` steps of `step_ms` each, checkpointing after every step and reporting progress; an
// attempt starts at the step its last checkpoint names.
import { defineHandler } from "@porter/sdk";
import { z } from "zod";

export default defineHandler({
  type: "test.resumable",
  payload: z.object({ steps: z.number().int().min(1), step_ms: z.number().int().min(0) }),
  run: async (job, ctx) => {
    const last = ctx.lastCheckpoint as { next: number; done_by: number[] } | null;
    const resumedFrom = last?.next ?? 0;
    const doneBy = last?.done_by ?? [];
    for (let step = resumedFrom; step < job.payload.steps; step++) {
      await new Promise((resolve) => setTimeout(resolve, job.payload.step_ms));
      doneBy.push(job.attempt);
      await ctx.checkpoint({ next: step + 1, done_by: doneBy });
      ctx.progress({ fraction: (step + 1) / job.payload.steps, step: `step ${step + 1}` });
    }
    return { resumed_from: resumedFrom, done_by: doneBy };
  },
});
